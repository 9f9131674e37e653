// Server code (src/ outside web and shared): Node's globals are known.
export const cwd: string = process.cwd();
export const bytes: Buffer = Buffer.from("card");
