/**
 * What the kernel (src/shared) may use of its host beyond ES2022. The kernel runs in Node 20
 * and in browsers alike, so it is compiled with neither's types (tsconfig.shared.json); the
 * few host calls both provide with the same shape are declared here, each a subset of both
 * the DOM's and @types/node's declaration. A new one is added here only if both hosts have it.
 */
declare const crypto: {
  getRandomValues<T extends Uint8Array>(array: T): T;
};
