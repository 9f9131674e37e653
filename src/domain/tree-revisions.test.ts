import { describe, expect, it } from "vitest";
import { LocalChangeFeed } from "./local-feed.js";
import type { ChangeFeed } from "./ports/change-feed.js";
import { FEED_EPOCH, TreeRevisions } from "./tree-revisions.js";

/** A feed across processes as TreeRevisions sees it: notices without changes, a link that drops and comes back. */
class SharedFeed extends LocalChangeFeed implements ChangeFeed {
  private listening = true;
  private readonly resync = new Set<() => void>();

  override get complete(): boolean {
    return this.listening;
  }

  override subscribeResync(listener: () => void): () => void {
    this.resync.add(listener);
    return () => this.resync.delete(listener);
  }

  lose(): void {
    this.listening = false;
  }

  restore(): void {
    this.listening = true;
    for (const listener of this.resync) listener();
  }
}

/** The revisions, told of the feed's notices and resyncs as wireChangeFeed (context.ts) tells them. */
function revisionsOf(feed: SharedFeed): TreeRevisions {
  const revisions = new TreeRevisions(feed);
  feed.subscribeAll((notice) => revisions.hear(notice));
  feed.subscribeResync(() => revisions.resync());
  return revisions;
}

describe("TreeRevisions with other processes", () => {
  it("takes another process's notice as moving the tree", () => {
    const feed = new SharedFeed();
    const revisions = revisionsOf(feed);
    expect(revisions.isCurrent("t1", 4)).toBe(true);
    feed.deliver({ treeId: "t1", revision: 5 });
    expect(revisions.isCurrent("t1", 4)).toBe(false);
    expect(revisions.isCurrent("t1", 5)).toBe(true);
  });

  it("calls nothing current while the feed cannot hear the others, and nothing from before once it hears again", () => {
    const feed = new SharedFeed();
    const revisions = revisionsOf(feed);
    const epoch = revisions.epoch;
    expect(revisions.isCurrent(FEED_EPOCH, epoch)).toBe(true);

    feed.lose();
    expect(revisions.isCurrent("t1", 4)).toBe(false);
    expect(revisions.isCurrent(FEED_EPOCH, epoch)).toBe(false);

    // Meanwhile another process wrote t1 (revision 5), and nobody heard.
    feed.restore();
    expect(revisions.epoch).not.toBe(epoch);
    // A result computed before (noted with the old epoch) is stale; one computed now is not.
    expect(revisions.isCurrent(FEED_EPOCH, epoch)).toBe(false);
    expect(revisions.isCurrent(FEED_EPOCH, revisions.epoch)).toBe(true);
    expect(revisions.isCurrent("t1", 5)).toBe(true);
  });
});
