/**
 * The change feed across processes sharing one PostgreSQL database (SPEC §11): the
 * ChangeFeed port, built on the in-process feed.
 *
 * - A change committed here is delivered to this process's listeners at once, with the
 *   change itself (as in one process). The store's commit has also sent a notice in its
 *   transaction (postgres/notices.ts), which every other process hears on its listening
 *   connection (postgres/listener.ts); this process skips its own, so nothing is delivered
 *   twice.
 * - A notice from another process carries the tree and revision only: listeners that need
 *   the change read it from the change log (live streams, the read model on its next read).
 * - Failed log-ins, verified credentials, sign-ups and presence (the `Peers` port) go out and come in on the same
 *   connection, so each process's log-in throttle and sign-up budget count the others' too.
 *   Sign-outs come in there too, sent by the store that removed the sessions.
 * - While the listening connection is down the feed is not `complete` (caches that trust it
 *   stop answering from memory); once it is back, every resync listener is called: the
 *   trees may have moved meanwhile without a word.
 */
import type { Change } from "../../shared/changes.js";
import { LocalChangeFeed } from "../../domain/local-feed.js";
import type { ChangeFeed, ChangeNotice } from "../../domain/ports/change-feed.js";
import type { Peers, PresenceNotice, SignOut } from "../../domain/ports/peers.js";
import { NoticeListener } from "./listener.js";
import { CHANGES_CHANNEL, decodePeerNotice, decodeTreeNotice, encodePeerNotice, ownTreeNoticeStart, PEERS_CHANNEL } from "./notices.js";

type Log = (message: string, fields: Record<string, unknown>) => void;

export class PostgresChangeFeed implements ChangeFeed, Peers {
  private readonly local: LocalChangeFeed;
  private readonly resyncListeners = new Set<() => void>();
  private readonly loginListeners = new Set<(keys: readonly string[], at: number) => void>();
  private readonly signupListeners = new Set<(address: string, at: number) => void>();
  private readonly contendedListeners = new Set<(treeId: string) => void>();
  private readonly signOutListeners = new Set<(which: SignOut) => void>();
  private readonly verifiedListeners = new Set<(credentials: string, at: number) => void>();
  private readonly presenceListeners = new Set<(notice: PresenceNotice) => void>();
  private readonly listener: NoticeListener;
  /** How this process's own change notices begin: skipped unread (notices.ts). */
  private readonly ownStart: string;

  constructor(
    databaseUrl: string,
    /** This process's name in the notices its store sends. */
    readonly origin: string,
    private readonly log: Log = () => undefined,
  ) {
    this.ownStart = ownTreeNoticeStart(origin);
    this.local = new LocalChangeFeed((err) => log("a change listener failed", { error: String(err) }));
    this.listener = new NoticeListener(
      databaseUrl,
      [CHANGES_CHANNEL, PEERS_CHANNEL],
      {
        notice: (channel, payload) => this.hear(channel, payload),
        lost: () => undefined,
        restored: () => this.resync(),
      },
      { log },
    );
  }

  start(): Promise<void> {
    return this.listener.start();
  }

  close(): Promise<void> {
    return this.listener.close();
  }

  get complete(): boolean {
    return this.listener.listening;
  }

  publish(change: Change): void {
    this.local.publish(change);
  }

  publishRemoval(treeId: string, revision: number): void {
    this.local.publishRemoval(treeId, revision);
  }

  subscribe(treeId: string, listener: (notice: ChangeNotice) => void): () => void {
    return this.local.subscribe(treeId, listener);
  }

  subscribeAll(listener: (notice: ChangeNotice) => void): () => void {
    return this.local.subscribeAll(listener);
  }

  subscribeResync(listener: () => void): () => void {
    this.resyncListeners.add(listener);
    return () => this.resyncListeners.delete(listener);
  }

  loginFailed(keys: readonly string[], at: number): void {
    this.listener.notify(PEERS_CHANNEL, encodePeerNotice({ origin: this.origin, event: "login", keys: [...keys], at }));
  }

  signedUp(address: string, at: number): void {
    this.listener.notify(PEERS_CHANNEL, encodePeerNotice({ origin: this.origin, event: "signup", address, at }));
  }

  onSignedUp(listener: (address: string, at: number) => void): () => void {
    this.signupListeners.add(listener);
    return () => this.signupListeners.delete(listener);
  }

  treeContended(treeId: string): void {
    this.listener.notify(PEERS_CHANNEL, encodePeerNotice({ origin: this.origin, event: "contended", treeId, at: Date.now() }));
  }

  onTreeContended(listener: (treeId: string) => void): () => void {
    this.contendedListeners.add(listener);
    return () => this.contendedListeners.delete(listener);
  }

  credentialsVerified(credentials: string, at: number): void {
    this.listener.notify(PEERS_CHANNEL, encodePeerNotice({ origin: this.origin, event: "verified", credentials, at }));
  }

  onCredentialsVerified(listener: (credentials: string, at: number) => void): () => void {
    this.verifiedListeners.add(listener);
    return () => this.verifiedListeners.delete(listener);
  }

  presence(notice: PresenceNotice): void {
    this.listener.notify(PEERS_CHANNEL, encodePeerNotice({ origin: this.origin, event: "presence", notice, at: Date.now() }));
  }

  onPresence(listener: (notice: PresenceNotice) => void): () => void {
    this.presenceListeners.add(listener);
    return () => this.presenceListeners.delete(listener);
  }

  onSignedOut(listener: (which: SignOut) => void): () => void {
    this.signOutListeners.add(listener);
    return () => this.signOutListeners.delete(listener);
  }

  onLoginFailed(listener: (keys: readonly string[], at: number) => void): () => void {
    this.loginListeners.add(listener);
    return () => this.loginListeners.delete(listener);
  }

  private hear(channel: string, payload: string | undefined): void {
    if (channel === CHANGES_CHANNEL) {
      if (payload?.startsWith(this.ownStart)) return;
      const notice = decodeTreeNotice(payload);
      if (!notice || notice.origin === this.origin) return;
      this.local.deliver(
        notice.removed
          ? { treeId: notice.treeId, revision: notice.revision, removed: true }
          : { treeId: notice.treeId, revision: notice.revision },
      );
    } else if (channel === PEERS_CHANNEL) {
      const notice = decodePeerNotice(payload);
      if (!notice || notice.origin === this.origin) return;
      if (notice.event === "login") for (const listener of this.loginListeners) this.guard(() => listener(notice.keys, notice.at));
      else if (notice.event === "signup") for (const listener of this.signupListeners) this.guard(() => listener(notice.address, notice.at));
      else if (notice.event === "verified") for (const listener of this.verifiedListeners) this.guard(() => listener(notice.credentials, notice.at));
      else if (notice.event === "presence") for (const listener of this.presenceListeners) this.guard(() => listener(notice.notice));
      else if (notice.event === "signout") for (const listener of this.signOutListeners) this.guard(() => listener(notice.which));
      else for (const listener of this.contendedListeners) this.guard(() => listener(notice.treeId));
    }
  }

  private resync(): void {
    for (const listener of this.resyncListeners) this.guard(listener);
  }

  private guard(call: () => void): void {
    try {
      call();
    } catch (err) {
      this.log("a change listener failed", { error: String(err) });
    }
  }
}
