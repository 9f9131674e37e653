/**
 * Writes to one tree from several processes (SPEC §11). Each process queues its own writes
 * to a tree (context `treeLocks`); across processes the store's revision guard refuses a
 * commit whose revision another process took first, and the loser tries again
 * (tree-access.ts `withTree`). Under steady writing to one tree through several processes
 * those races repeat, and a write that lost every try answered 409.
 *
 * So once a process has lost a race on a tree, its writes to that tree hold a lock every
 * process respects (`Locks`: a PostgreSQL advisory lock) from loading the tree to the
 * commit, for `CONTENDED_MS` after its last loss. When each of the processes writing the
 * tree has lost once, their writes take turns on the lock and no longer race at all;
 * writes to trees nobody contends pay nothing.
 */
import type { Locks } from "./ports/locks.js";

/** How long after its last lost race a process keeps locking a tree's writes. */
export const CONTENDED_MS = 30_000;
/** Trees remembered as contended before the expired ones are forgotten. */
const PRUNE_AT = 1_000;

export class TreeRaces {
  /** Tree id to the time (performance.now) its contention ends. */
  private readonly until = new Map<string, number>();

  /** `locks`: held across processes; absent, this process writes alone and never races. */
  constructor(private readonly locks?: Locks) {}

  /** Runs one attempt at a write to `treeId`, under the cross-process lock while the tree is contended. */
  attempt<T>(treeId: string, work: () => Promise<T>): Promise<T> {
    if (!this.locks || !this.contended(treeId)) return work();
    return this.locks.run(`tree:${treeId}`, work);
  }

  /** A write to `treeId` lost its revision to another process. */
  lost(treeId: string): void {
    const now = performance.now();
    if (this.until.size >= PRUNE_AT) {
      for (const [id, end] of this.until) if (end <= now) this.until.delete(id);
    }
    this.until.set(treeId, now + CONTENDED_MS);
  }

  contended(treeId: string): boolean {
    return (this.until.get(treeId) ?? 0) > performance.now();
  }
}
