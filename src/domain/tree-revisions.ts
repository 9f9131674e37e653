/**
 * Each tree's latest revision as the change feed has published it, for caches that must
 * tell, without reading the store, whether what they derived from a tree record is still
 * current (the GraphQL result cache). Revisions are the trees' own (SPEC §10), committed
 * with every change; this only remembers the last one heard per tree.
 */
import type { ChangeFeed } from "./ports/change-feed.js";

const REMOVED = -1;

export class TreeRevisions {
  private readonly latest = new Map<string, number>();

  constructor(feed: ChangeFeed) {
    feed.subscribeAll((notice) => {
      if (notice.removed) this.latest.set(notice.treeId, REMOVED);
      else if (notice.revision > (this.latest.get(notice.treeId) ?? 0)) this.latest.set(notice.treeId, notice.revision);
    });
  }

  /**
   * Whether `revision`, read from the tree's record in the store, is still the tree's. A tree
   * the feed has said nothing of since start is where the store had it, so any revision read
   * from the store is current; one owner process per data directory (data/LOCK) means the
   * feed hears every change.
   */
  isCurrent(treeId: string, revision: number): boolean {
    const latest = this.latest.get(treeId);
    return latest === undefined || latest === revision;
  }
}
