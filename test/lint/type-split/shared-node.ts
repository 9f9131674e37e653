// The kernel reaching for Node's globals: must not compile.
export const bytes = Buffer.from("card");
