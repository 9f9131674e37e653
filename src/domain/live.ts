/**
 * Live changes (SPEC §10): a reader follows one tree's changes, from a revision it names or
 * from now. The transports frame it (REST: Server-Sent Events, src/rest/event-routes.ts;
 * GraphQL: the `treeChanged` subscription); everything a reader is promised is kept here:
 *
 * - Authorised like a read (the policy's `watch`: members, and anyone for a public tree).
 *   A change to the tree record (sharing, publishing) is checked again against the
 *   reader, who is cut off (`revoked`) the moment it no longer may; a deleted tree ends its
 *   streams (`removed`).
 * - A stream lasts no longer than the access it was opened with (`StreamAccess`): one opened
 *   with a cookie session ends at the session's `expiresAt` (`expired`) or when the session
 *   ends (logout); every stream of a user ends when their password changes (basic
 *   credentials with the old password no longer authenticate), except those of the session
 *   that changed it (`signed-out`). Sign-outs cross to the other processes sharing the
 *   store (`Peers.onSignedOut`), and a process whose link to them was down checks each
 *   stream's access against the store once it is back (`recheckAccess`). Any long-lived
 *   connection, not only a `LiveStream`, can `join` the registry to be ended the same way.
 * - Replay then live, in revision order, without gap or duplicate: the stream listens on the
 *   feed before it reads the log, so a change committed meanwhile is in one or the other
 *   (or both: anything at or below the last revision sent is skipped). A notice past a gap,
 *   or without its change (another process's), is filled in from the log; so is whatever
 *   the feed may have missed while its link to the other processes was down (`catchUp`).
 * - A reader further behind than `maxBacklog` changes, ahead of the tree, or behind a
 *   pruned log gets one `reset` (with the revision to reload at) and the stream ends.
 * - A stream never holds up a writer: the feed only queues the change here; a reader that
 *   does not take its events (`queueEvents` waiting) is dropped (`slow`).
 * - Admission: streams per user, per anonymous address and in all are limited
 *   (`LiveStreams.admit`), answered `too_many_requests`.
 */
import type { LiveLimits } from "../config.js";
import type { Change, ChangeKind } from "../shared/changes.js";
import { TooManyRequestsError, UnavailableError } from "../shared/errors.js";
import type { Card, StoredUser, TreeView } from "../shared/records.js";
import type { Ports } from "./context.js";
import { can, type Actor } from "./policy.js";
import type { ChangeNotice } from "./ports/change-feed.js";
import type { Peers, SignOut } from "./ports/peers.js";
import type { Session, Store } from "./ports/store.js";
import { presentCard, presentTree } from "./presenters.js";
import { loadTree } from "./trees.js";

/** Log reads a stream tries again while the store does not answer (over about 20 s) before it resets. */
const UNAVAILABLE_RETRIES = 8;

export type LiveEvent = { type: "change"; change: Change } | { type: "reset"; revision: number };

/** Why a stream ended. */
export type EndReason = "reset" | "revoked" | "removed" | "signed-out" | "expired" | "slow" | "closed" | "stopping";

/** What a long-lived connection was opened with: it ends when this does. */
export interface StreamAccess {
  /** The signed-in user; null for an anonymous reader. */
  userId: string | null;
  /** The cookie session; null for basic credentials and anonymous readers. */
  sessionId: string | null;
  /** When that session ends by itself (an ISO time); null without a session. */
  expiresAt: string | null;
  /** Basic credentials: the password hash they matched, so a changed password is noticed in the store. */
  passwordHash: string | null;
}

/** The access of a caller as the HTTP middleware settled it (either transport, any framing). */
export function accessOf(user: StoredUser | null, session: Session | null): StreamAccess {
  return {
    userId: user?._id ?? null,
    sessionId: session?._id ?? null,
    expiresAt: session?.expiresAt ?? null,
    passwordHash: user && !session ? user.passwordHash : null,
  };
}

/** Anything held open on some access: a `LiveStream`, a WebSocket connection. */
export interface AccessHolder {
  readonly access: StreamAccess;
  /** Ends it (idempotent): `signed-out` or `expired`. */
  end(reason: EndReason): void;
}

/** setTimeout's longest delay (about 24.8 days); a session may last longer. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A change as a reader sees it: no private field (author, trash state) ever leaves. */
export interface ChangeView {
  revision: number;
  at: string;
  kind: ChangeKind;
  userId: string | null;
  /** The cards created, edited, moved or restored, as they are after the change. */
  cards: Card[];
  /** Ids of the cards it sent to the trash. */
  deleted: string[];
  /** The tree record after the change, when the change touched it (rename, sharing, publishing). */
  tree?: TreeView;
}

const views = new WeakMap<Change, ChangeView>();

/** The reader's view of `change`, computed once however many streams send it. */
export function presentChange(change: Change): ChangeView {
  let view = views.get(change);
  if (view) return view;
  view = {
    revision: change.revision,
    at: change.at,
    kind: change.kind,
    userId: change.userId,
    cards: change.after.filter((card) => card.trashed === undefined).map(presentCard),
    deleted: change.after.filter((card) => card.trashed !== undefined).map((card) => card._id),
  };
  if (change.tree) view.tree = presentTree(change.tree.after);
  views.set(change, view);
  return view;
}

/** The open streams of the process, and how many each kind of caller may open. */
export class LiveStreams {
  private readonly open = new Set<LiveStream>();
  /** The open streams by the tree they follow, which hear that tree's notices. */
  private readonly byTree = new Map<string, Set<LiveStream>>();
  private readonly byKey = new Map<string, number>();
  /** Streams admitted and not yet released, of every key: summing `byKey` on each admission cost O(callers). */
  private admitted = 0;
  /** Everything held open on some access, with the timer that ends it at its session's expiry. */
  private readonly holders = new Map<AccessHolder, NodeJS.Timeout | undefined>();

  /** `peers`: the other processes sharing the store, which tell of the sign-outs made there. */
  constructor(
    readonly limits: LiveLimits,
    peers?: Peers,
  ) {
    peers?.onSignedOut((which) => this.signedOut(which));
  }

  get count(): number {
    return this.open.size;
  }

  /**
   * Counts a stream about to open for `actor` (or, anonymous, for `address`).
   * @returns what to call when it ends. @throws TooManyRequestsError past a limit.
   */
  admit(actor: Actor | null, address: string): () => void {
    const key = actor ? `user:${actor._id}` : `address:${address}`;
    const limit = actor ? this.limits.perUser : this.limits.perAddress;
    if (this.admitted >= this.limits.total) {
      throw new TooManyRequestsError("Too many live streams are open on this server; try again later.", 10);
    }
    const held = this.byKey.get(key) ?? 0;
    if (held >= limit) {
      throw new TooManyRequestsError(`At most ${limit} live streams may be open at once from one ${actor ? "user" : "address"}; close one first.`, 5);
    }
    this.byKey.set(key, held + 1);
    this.admitted++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.admitted--;
      const now = (this.byKey.get(key) ?? 1) - 1;
      if (now > 0) this.byKey.set(key, now);
      else this.byKey.delete(key);
    };
  }

  /** From now on `stream` hears its tree's notices (before it reads the log: see LiveStream). */
  track(stream: LiveStream): void {
    this.open.add(stream);
    let streams = this.byTree.get(stream.treeId);
    if (!streams) this.byTree.set(stream.treeId, (streams = new Set()));
    streams.add(stream);
  }

  untrack(stream: LiveStream): void {
    this.open.delete(stream);
    const streams = this.byTree.get(stream.treeId);
    streams?.delete(stream);
    if (streams?.size === 0) this.byTree.delete(stream.treeId);
  }

  /**
   * A notice of the feed (wireChangeFeed, context.ts), handed to the streams of its tree. A
   * stream that throws is skipped, so it never keeps the change from the others.
   */
  hear(notice: ChangeNotice): void {
    const streams = this.byTree.get(notice.treeId);
    if (!streams) return;
    for (const stream of [...streams]) {
      try {
        stream.hear(notice);
      } catch {
        // Skipped like a failing feed listener (local-feed.ts).
      }
    }
  }

  /**
   * Every stream catches up with its tree as the store has it: the feed may have missed
   * other processes' changes (its connection to them dropped and came back, SPEC §11).
   */
  catchUpAll(): void {
    for (const stream of this.open) stream.catchUp();
  }

  /**
   * Holds `holder` until its access ends: it is ended (`signed-out`) by a sign-out of its
   * session or user, here or in another process, and (`expired`) at its session's
   * `expiresAt`. The hook every long-lived transport uses (SSE, GraphQL subscriptions,
   * WebSockets). @returns the leave, to call when it ends otherwise.
   */
  join(holder: AccessHolder): () => void {
    this.holders.set(holder, this.expiryTimer(holder));
    return () => {
      clearTimeout(this.holders.get(holder));
      this.holders.delete(holder);
    };
  }

  private expiryTimer(holder: AccessHolder): NodeJS.Timeout | undefined {
    if (holder.access.expiresAt === null) return undefined;
    const left = Date.parse(holder.access.expiresAt) - Date.now();
    const timer = setTimeout(
      () => {
        if (!this.holders.has(holder)) return;
        if (left > MAX_TIMER_MS) this.holders.set(holder, this.expiryTimer(holder));
        else holder.end("expired");
      },
      Math.max(0, Math.min(left, MAX_TIMER_MS)),
    );
    timer.unref();
    return timer;
  }

  /**
   * Ends what was opened with credentials that no longer hold: the cookie session
   * `sessionId`, or, with `userId`, everything of that user but what `keepSessionId` holds.
   * The one entry point for sign-outs (logout, a password change, the operator's `user
   * passwd`), made here or, heard through `peers`, in another process: a store shared by
   * processes tells them in the same transaction that removes the sessions.
   */
  signedOut(which: SignOut): void {
    for (const holder of [...this.holders.keys()]) {
      const { userId, sessionId } = holder.access;
      const ends =
        "sessionId" in which
          ? sessionId === which.sessionId
          : userId === which.userId && (which.keepSessionId === undefined || sessionId !== which.keepSessionId);
      if (ends) holder.end("signed-out");
    }
  }

  /**
   * Ends what was opened with access the store no longer grants: a session removed or
   * expired, basic credentials whose password changed or whose user is gone. For sign-outs
   * another process made while the link to it was down (a notice sent then is lost).
   */
  async recheckAccess(store: Store): Promise<void> {
    const now = new Date().toISOString();
    const sessions = new Map<string, Promise<boolean>>();
    const users = new Map<string, Promise<string | null>>();
    for (const holder of [...this.holders.keys()]) {
      const { userId, sessionId, passwordHash } = holder.access;
      let holds = true;
      if (sessionId !== null) {
        let live = sessions.get(sessionId);
        if (!live) sessions.set(sessionId, (live = store.sessions.byId(sessionId).then((s) => s !== null && s.expiresAt > now)));
        holds = await live;
      } else if (userId !== null && passwordHash !== null) {
        let hash = users.get(userId);
        if (!hash) users.set(userId, (hash = store.users.byId(userId).then((u) => u?.passwordHash ?? null)));
        holds = (await hash) === passwordHash;
      }
      if (!holds) holder.end("signed-out");
    }
  }

  /** Ends every stream and held connection (the server is stopping), so their connections close. */
  closeAll(): void {
    for (const stream of [...this.open]) stream.end("stopping");
    // And whatever else holds access open (a GraphQL WebSocket connection), so its socket closes.
    for (const holder of [...this.holders.keys()]) holder.end("stopping");
  }
}

export interface FollowOptions {
  /** The last revision the reader has; absent: from the tree's revision now. */
  since?: number;
  /** The client's address, for the anonymous streams' limit. */
  address: string;
  /** What the caller is signed in with (`accessOf`): the stream ends with it. Anonymous when absent. */
  access?: StreamAccess;
}

/**
 * Opens a stream of the tree's changes after `options.since`.
 * @throws ValidationError for a malformed id; UnauthenticatedError or NotFoundError as the
 *   policy decides; TooManyRequestsError past a stream limit.
 */
export async function followTree(ctx: Ports<"store" | "config" | "live">, actor: Actor | null, treeId: string, options: FollowOptions): Promise<LiveStream> {
  const release = ctx.live.admit(actor, options.address);
  let stream: LiveStream | undefined;
  try {
    const tree = await loadTree(ctx, actor, treeId, "watch");
    stream = new LiveStream(ctx, actor, treeId, release, options.access ?? accessOf(null, null));
    const current = tree.revision ?? 0;
    const since = options.since ?? current;
    stream.start(since, current);
    return stream;
  } catch (err) {
    if (stream) stream.end("closed");
    else release();
    throw err;
  }
}

export class LiveStream implements AsyncIterableIterator<LiveEvent>, AccessHolder {
  /** Set once the stream has ended; the events queued before that are still handed out. */
  reason: EndReason | null = null;
  private readonly queue: LiveEvent[] = [];
  private waiting: ((result: IteratorResult<LiveEvent>) => void) | null = null;
  private lastSent = 0;
  /** Notices are handled one after another, each after any log read before it. */
  private work: Promise<void> = Promise.resolve();
  private readonly leave: () => void;
  private readonly endListeners: ((reason: EndReason) => void)[] = [];

  constructor(
    private readonly ctx: Ports<"store" | "config" | "live">,
    private readonly actor: Actor | null,
    readonly treeId: string,
    private readonly release: () => void,
    readonly access: StreamAccess,
  ) {
    // Before the log is read: a change committed meanwhile is heard, or in the log.
    ctx.live.track(this);
    this.leave = ctx.live.join(this);
  }

  /** Replays the log after `since`, or resets a reader too far behind or ahead. */
  start(since: number, current: number): void {
    this.lastSent = since;
    if (since > current || current - since > this.ctx.config.live.maxBacklog) {
      this.reset(current);
      return;
    }
    if (since < current) this.take(() => this.fillTo(current));
  }

  /** Calls `listener` once the stream ends (at once if it has). */
  onEnd(listener: (reason: EndReason) => void): void {
    if (this.reason) listener(this.reason);
    else this.endListeners.push(listener);
  }

  end(reason: EndReason): void {
    if (this.reason) return;
    this.reason = reason;
    // A reader cut off gets nothing more; one that ends normally gets what was queued.
    if (reason !== "reset" && reason !== "stopping") this.queue.length = 0;
    if (this.retry) clearTimeout(this.retry);
    this.leave();
    this.release();
    this.ctx.live.untrack(this);
    if (this.waiting && this.queue.length === 0) {
      const wake = this.waiting;
      this.waiting = null;
      wake({ done: true, value: undefined });
    }
    for (const listener of this.endListeners.splice(0)) listener(reason);
  }

  /**
   * Hands each event to `sink` the moment it comes, instead of queuing it for the iterator:
   * a transport that writes events synchronously (SSE) then costs a change one call per
   * stream, not a promise and an async resumption each (with 10,000 readers that was
   * most of a fan-out). Events queued before this is called go first. A sink that returns
   * false (its connection is gone) ends the stream, `closed`. Use one or the other: after
   * this, the iterator gets nothing.
   */
  deliverTo(sink: (event: LiveEvent) => boolean): void {
    this.sink = sink;
    for (const event of this.queue.splice(0)) {
      if (!sink(event)) return this.end("closed");
    }
  }

  private sink: ((event: LiveEvent) => boolean) | null = null;

  next(): Promise<IteratorResult<LiveEvent>> {
    const event = this.queue.shift();
    if (event) return Promise.resolve({ done: false, value: event });
    if (this.reason) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => (this.waiting = resolve));
  }

  return(): Promise<IteratorResult<LiveEvent>> {
    this.end("closed");
    return Promise.resolve({ done: true, value: undefined });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /**
   * Reads the tree's revision from the store and delivers what the stream has not sent up
   * to it, in order after anything already queued; a tree gone meanwhile ends the stream.
   */
  catchUp(): void {
    this.take(async () => {
      const tree = await this.ctx.store.trees.byId(this.treeId);
      if (!tree) return this.end("removed");
      if ((tree.revision ?? 0) > this.lastSent) await this.fillTo(tree.revision ?? 0);
    });
  }

  /** A notice of this stream's tree, from `LiveStreams.hear`. */
  hear(notice: ChangeNotice): void {
    if (notice.removed) {
      this.end("removed");
      return;
    }
    // The common case, at once: the next change, with no log read waiting before it.
    if (this.turns === 0) {
      if (notice.revision <= this.lastSent) return;
      if (notice.change && notice.revision === this.lastSent + 1) {
        this.deliver(notice.change);
        return;
      }
    }
    this.take(async () => {
      if (notice.revision <= this.lastSent) return;
      if (notice.change && notice.revision === this.lastSent + 1) this.deliver(notice.change);
      else await this.fillTo(notice.revision);
    });
  }

  /** Log reads and the notices heard meanwhile, in order. */
  private turns = 0;

  private take(turn: () => Promise<void>): void {
    this.turns++;
    this.work = this.work
      .then(() => (this.reason ? undefined : turn()))
      .catch((err: unknown) => this.fail(err))
      .finally(() => {
        this.turns--;
      });
  }

  /** Reads the log from the last revision sent up to `revision` and delivers it, or resets. */
  private async fillTo(revision: number): Promise<void> {
    if (this.reason) return;
    const { maxBacklog } = this.ctx.config.live;
    const missing = revision - this.lastSent;
    if (missing > maxBacklog) return this.reset(revision);
    const changes = await this.ctx.store.changes.since(this.treeId, this.lastSent, missing);
    // Replayed changes are history: one that took the reader off the tree does not cut them
    // off when the tree as it is now lets them watch (they were given it back since).
    let allowedNow: boolean | undefined;
    for (const change of changes) {
      if (this.reason) return;
      if (change.revision <= this.lastSent) continue;
      // The log no longer holds what came between (pruned): the reader must reload.
      if (change.revision !== this.lastSent + 1) return this.reset(revision);
      if (change.tree && !can(this.actor, "watch", change.tree.after)) {
        allowedNow ??= await this.mayWatchNow();
        this.deliver(change, allowedNow);
      } else this.deliver(change);
    }
    if (!this.reason && this.lastSent < revision) this.reset(revision);
  }

  /** Whether the tree as the store has it now lets the reader watch it. */
  private async mayWatchNow(): Promise<boolean> {
    const tree = await this.ctx.store.trees.byId(this.treeId);
    return tree !== null && can(this.actor, "watch", tree);
  }

  /** `allowedNow`: a replayed change, and the tree as it is now lets the reader watch. */
  private deliver(change: Change, allowedNow = false): void {
    if (this.reason) return;
    this.unavailable = 0;
    if (change.tree && !allowedNow && !can(this.actor, "watch", change.tree.after)) {
      this.end("revoked");
      return;
    }
    this.lastSent = change.revision;
    this.push({ type: "change", change });
  }

  private reset(revision: number): void {
    this.push({ type: "reset", revision });
    this.end("reset");
  }

  private push(event: LiveEvent): void {
    if (this.reason) return;
    if (this.sink) {
      if (!this.sink(event)) this.end("closed");
      return;
    }
    if (this.waiting) {
      const wake = this.waiting;
      this.waiting = null;
      wake({ done: false, value: event });
      return;
    }
    this.queue.push(event);
    if (this.queue.length > this.ctx.config.live.queueEvents) this.end("slow");
  }

  /** Log reads that failed in a row because the store did not answer. */
  private unavailable = 0;
  /** The catch-up planned after such a failure, while it waits. */
  private retry: NodeJS.Timeout | null = null;

  /**
   * A log read that failed. The store not answering (a database restarting, SPEC §11) is
   * tried again a few times, a little later each time, from the tree as it then is; any
   * other failure, or one that lasts, means the reader cannot be told what it missed, so
   * it reloads. One planned catch-up covers every read that fails before it runs: it reads
   * up to the tree's revision then, which is at least what each of them wanted. (Counted
   * one by one, the reads queued behind the first, one per notice heard meanwhile, used up
   * the tries within a second of a database restart, and the stream reset.)
   */
  private fail(err: unknown): void {
    if (this.reason) return;
    if (err instanceof UnavailableError) {
      if (this.retry) return;
      if (this.unavailable < UNAVAILABLE_RETRIES) {
        this.unavailable++;
        this.retry = setTimeout(() => {
          this.retry = null;
          this.catchUp();
        }, 250 * 2 ** Math.min(this.unavailable, 4));
        this.retry.unref();
        return;
      }
    }
    this.reset(this.lastSent);
  }
}
