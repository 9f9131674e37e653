/**
 * The change feed (SPEC §10): who hears about a committed change. In one process the feed
 * is in memory (src/domain/local-feed.ts); across processes an adapter carries the tree
 * and revision (PostgreSQL LISTEN/NOTIFY, Redis) and listeners read the changes they miss
 * from the store's change log.
 */
import type { Change } from "../../shared/changes.js";

export interface ChangeNotice {
  treeId: string;
  revision: number;
  /** The change itself when the publisher is in this process; otherwise read it from the log. */
  change?: Change;
}

export interface ChangeFeed {
  /** Called once a change is committed (never before: a listener may read the store at once). */
  publish(change: Change): void;
  /** Calls `listener` for every change of the tree from now on; returns the unsubscribe. */
  subscribe(treeId: string, listener: (notice: ChangeNotice) => void): () => void;
  /** Calls `listener` for every change of any tree; returns the unsubscribe. */
  subscribeAll(listener: (notice: ChangeNotice) => void): () => void;
}
