/**
 * Each tree's latest revision as the change feed has published it, for caches that must
 * tell, without reading the store, whether what they derived from a tree record is still
 * current (the GraphQL result cache). Revisions are the trees' own (SPEC §10), committed
 * with every change; this only remembers the last one heard per tree.
 *
 * With several processes on one database (SPEC §11) the feed also hears the others'
 * changes, a moment after they commit. While it cannot hear them (its connection is down)
 * nothing is current; once it hears again, nothing derived before is either: the feed's
 * `epoch` moves on, and a result noted under an older epoch (`FEED_EPOCH`) is stale.
 */
import type { ChangeFeed, ChangeNotice } from "./ports/change-feed.js";

const REMOVED = -1;

/** The dependency key under which a cached result notes the feed epoch it was computed in; no tree id has a space. */
export const FEED_EPOCH = "feed epoch";

export class TreeRevisions {
  private readonly latest = new Map<string, number>();
  private epochNow = 0;

  /** `feed`: the feed whose notices `hear` is given (wireChangeFeed, context.ts), asked whether it is complete. */
  constructor(private readonly feed: Pick<ChangeFeed, "complete">) {}

  /** A notice of the feed: the tree's revision moved on, or the tree is gone. */
  hear(notice: ChangeNotice): void {
    if (notice.removed) this.latest.set(notice.treeId, REMOVED);
    else if (notice.revision > (this.latest.get(notice.treeId) ?? 0)) this.latest.set(notice.treeId, notice.revision);
  }

  /** The feed may have missed notices: a new epoch, and no tree's revision is known. */
  resync(): void {
    this.epochNow++;
    this.latest.clear();
  }

  /** Moves on each time the feed may have missed notices. */
  get epoch(): number {
    return this.epochNow;
  }

  /**
   * Whether `revision`, read from the tree's record in the store, is still the tree's (or,
   * for `FEED_EPOCH`, whether that epoch is still the feed's). A tree the feed has said
   * nothing of since start (or since the last resync) is where the store had it, so any
   * revision read from the store is current: the feed hears every change of every process
   * that shares the store, and nothing is current while it cannot.
   */
  isCurrent(treeId: string, revision: number): boolean {
    if (!this.feed.complete) return false;
    if (treeId === FEED_EPOCH) return revision === this.epochNow;
    const latest = this.latest.get(treeId);
    return latest === undefined || latest === revision;
  }
}
