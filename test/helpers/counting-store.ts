/**
 * A Store that counts the reads it passes on to the real one, for tests that prove a
 * query is batched (a whole tree read once, not once per card). Writes are not counted.
 */
import type { Store } from "../../src/domain/ports/store.js";

const WRITE = /^(insert|update|replace|trash|remove)/;
const REPOSITORIES = ["users", "trees", "cards", "sessions"] as const;

export function countingReads(store: Store): { store: Store; reads: { count: number } } {
  const reads = { count: 0 };
  const counted = <T extends object>(repository: T): T =>
    new Proxy(repository, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== "function" || typeof name !== "string" || WRITE.test(name)) return value;
        return (...args: unknown[]) => {
          reads.count++;
          return value.apply(target, args);
        };
      },
    });
  const wrapped: Store = Object.create(store);
  for (const name of REPOSITORIES) Object.defineProperty(wrapped, name, { value: counted(store[name]) });
  return { store: wrapped, reads };
}
