/**
 * Serialises the writes to one tree. A write reads the tree (to check parents, cycles,
 * positions) and then writes; two such writes interleaving could build a cycle or an
 * orphan. One process owns the embedded store, so an in-process queue per key suffices.
 * The same queue per owner makes the card-limit check and the insert it allows one step
 * across all of the owner's trees (card-batches.ts); with processes sharing a PostgreSQL
 * store, the owner's queue is held in the database too (src/store/postgres/locks.ts), and
 * a tree's revision guard stands in for a cross-process tree lock (tree-access.ts `withTree`),
 * and a tree found contended is locked in the database too (tree-races.ts).
 */
import type { Locks } from "./ports/locks.js";

export class KeyedLock implements Locks {
  private tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    try {
      return await result;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
