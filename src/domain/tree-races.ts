/**
 * Writes to one tree from several processes (SPEC §11). Each process queues its own writes
 * to a tree (context `treeLocks`); across processes the store's revision guard refuses a
 * commit whose revision another process took first, and the loser tries again
 * (tree-access.ts `withTree`). Under steady writing to one tree through several processes
 * those races repeat, and a write that lost every try answered 409.
 *
 * So a lost race marks the tree contended, here and, through the peers' channel, in every
 * other process: for `CONTENDED_MS` each process's writes to that tree hold a lock every
 * process respects (`Locks`: a PostgreSQL advisory lock) from loading the tree to the
 * commit, and take turns instead of racing. Telling the others matters: a process that
 * kept winning would otherwise never lock, and the one that locked (its tries now slower)
 * would lose to it again and again. Writes to trees nobody contends pay nothing.
 */
import type { Locks } from "./ports/locks.js";
import type { Peers } from "./ports/peers.js";

/** How long after the last lost race (here or elsewhere) a tree's writes are locked. */
export const CONTENDED_MS = 30_000;
/** Trees remembered as contended before the expired ones are forgotten. */
const PRUNE_AT = 1_000;

export class TreeRaces {
  /** Tree id to the time (`now`) its contention ends. */
  private readonly until = new Map<string, number>();

  /**
   * `locks`: held across processes; absent, this process writes alone and never races.
   * `peers`: the other processes, told of each lost race and telling of theirs (once all
   * take turns none loses, so the notices stop by themselves). `now`: a monotonic clock, ms.
   */
  constructor(
    private readonly locks?: Locks,
    private readonly peers?: Peers,
    private readonly now: () => number = () => performance.now(),
  ) {
    peers?.onTreeContended((treeId) => this.mark(treeId));
  }

  /** Runs one attempt at a write to `treeId`, under the cross-process lock while the tree is contended. */
  attempt<T>(treeId: string, work: () => Promise<T>): Promise<T> {
    if (!this.locks || !this.contended(treeId)) return work();
    return this.locks.run(`tree:${treeId}`, work);
  }

  /** A write to `treeId` lost its revision to another process. */
  lost(treeId: string): void {
    this.mark(treeId);
    this.peers?.treeContended(treeId);
  }

  contended(treeId: string): boolean {
    return (this.until.get(treeId) ?? -Infinity) > this.now();
  }

  /** How many trees are remembered (contended or not yet forgotten). */
  get remembered(): number {
    return this.until.size;
  }

  private mark(treeId: string): void {
    const now = this.now();
    if (this.until.size >= PRUNE_AT) {
      for (const [id, end] of this.until) if (end <= now) this.until.delete(id);
    }
    this.until.set(treeId, now + CONTENDED_MS);
  }
}
