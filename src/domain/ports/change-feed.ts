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
  /** The tree was deleted (with its cards and its log); `revision` is its last. */
  removed?: true;
}

export interface ChangeFeed {
  /** Called once a change is committed (never before: a listener may read the store at once). */
  publish(change: Change): void;
  /** Called once a tree is deleted: its readers stop, what was derived from it goes. */
  publishRemoval(treeId: string, revision: number): void;
  /** Calls `listener` for every change of the tree from now on; returns the unsubscribe. */
  subscribe(treeId: string, listener: (notice: ChangeNotice) => void): () => void;
  /** Calls `listener` for every change of any tree; returns the unsubscribe. */
  subscribeAll(listener: (notice: ChangeNotice) => void): () => void;
  /**
   * Calls `listener` whenever notices from other processes may have been missed (a
   * cross-process feed lost its connection, and again once it is back): anything derived
   * from any tree may be stale, and readers catch up from the change log. Never called by
   * a feed within one process.
   */
  subscribeResync(listener: () => void): () => void;
  /**
   * Whether every committed change of every process is being heard now. Always true within
   * one process; false while a cross-process feed is reconnecting.
   */
  readonly complete: boolean;
}
