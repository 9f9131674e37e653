// Client code reaching for Node's globals: must not compile.
export const cwd: string = process.cwd();
