/**
 * Follows one tree's Server-Sent Events stream (`GET /api/trees/:id/events`, SPEC §10) with
 * the browser's EventSource: same origin, the cookie session, nothing the CSP has to allow.
 * Resumes from the last revision applied: EventSource sends `Last-Event-ID` itself when it
 * reconnects after a dropped connection; when it gives up (the server answered an error, or
 * the stream ended with `reset`) a new one is opened with `?since=` after a pause, and at
 * once when the browser is back online. A stream that keeps ending without bringing anything
 * (three times in a row) is given up on: the tree is reloaded and followed from its
 * revision now. (A reader taken off a tree and given it back is such a case: the change that
 * took them off, replayed, ends each resumed stream.)
 */
import type { Card, TreeView } from "../../shared/records.js";

/** A change as the stream sends it (SPEC §10): the cards after it, the ids it deleted. */
export interface RemoteChange {
  revision: number;
  at?: string;
  /** The server's change kind (`card.update`, `card.move`, …); `reset` for a reload. */
  kind: string;
  userId: string | null;
  cards: Card[];
  deleted: string[];
  /** The tree record after the change, when it changed it (a rename, sharing, publishing). */
  tree?: TreeView;
}

export interface FollowHandlers {
  /** The revision to resume after. */
  revision(): number;
  change(change: RemoteChange): void;
  /** The reader fell too far behind: reload, then call `resume()`. */
  reset(revision: number): void;
  /** Resuming keeps failing: reload the tree and its revision now; the follower reopens after. */
  stalled(): Promise<void>;
}

/** Streams in a row that ended without an event before the follower reloads instead. */
const STALLED_AFTER = 3;

const BACKOFF_MS = [1000, 2000, 5000, 10000, 30000];

export class TreeFollower {
  private source: EventSource | null = null;
  private timer: number | undefined;
  private failures = 0;
  /** Streams in a row that ended without bringing a change. */
  private barren = 0;
  private heard = false;
  private stopped = false;
  private readonly onOnline = () => {
    if (!this.source || this.source.readyState === EventSource.CLOSED) this.open();
  };

  constructor(
    private readonly treeId: string,
    private readonly handlers: FollowHandlers,
  ) {
    window.addEventListener("online", this.onOnline);
  }

  /** True while the stream is open (for tests and the status line). */
  get connected(): boolean {
    return this.source?.readyState === EventSource.OPEN;
  }

  start(): void {
    this.open();
  }

  /** Opens the stream again from the current revision (after a reset's reload). */
  resume(): void {
    this.failures = 0;
    this.open();
  }

  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.timer);
    window.removeEventListener("online", this.onOnline);
    this.source?.close();
    this.source = null;
  }

  private open(): void {
    if (this.stopped) return;
    window.clearTimeout(this.timer);
    this.timer = undefined;
    this.source?.close();
    const since = this.handlers.revision();
    const source = new EventSource(`/api/trees/${encodeURIComponent(this.treeId)}/events?since=${since}`);
    this.source = source;
    this.heard = false;
    source.addEventListener("open", () => (this.failures = 0));
    source.addEventListener("change", (event) => {
      this.heard = true;
      this.barren = 0;
      let change: RemoteChange;
      try {
        change = JSON.parse((event as MessageEvent<string>).data) as RemoteChange;
      } catch {
        return;
      }
      this.handlers.change(change);
    });
    source.addEventListener("reset", (event) => {
      source.close();
      if (this.source === source) this.source = null;
      let revision = this.handlers.revision();
      try {
        revision = (JSON.parse((event as MessageEvent<string>).data) as { revision: number }).revision;
      } catch {
        // Reload anyway: the server said this reader cannot be brought up to date.
      }
      this.handlers.reset(revision);
    });
    source.addEventListener("error", () => {
      if (this.source !== source) return;
      if (!this.heard && ++this.barren >= STALLED_AFTER) {
        this.barren = 0;
        source.close();
        this.source = null;
        void this.handlers.stalled().finally(() => this.retryLater());
        return;
      }
      this.heard = false;
      // CONNECTING: the browser reconnects by itself, with Last-Event-ID. CLOSED: it gave up.
      if (source.readyState === EventSource.CLOSED) this.retryLater();
    });
  }

  private retryLater(): void {
    if (this.stopped) return;
    window.clearTimeout(this.timer);
    const delay = BACKOFF_MS[Math.min(this.failures, BACKOFF_MS.length - 1)];
    this.failures++;
    this.timer = window.setTimeout(() => this.open(), delay);
  }
}
