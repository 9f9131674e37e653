/**
 * The domain's ports and what follows the change feed: the store, the configuration, the
 * password hasher, the per-tree and per-owner write locks, the change feed and its consumers
 * (the trees' latest revisions, the read model, live streams). Built once, complete, at
 * start-up by the composition root (src/server.ts, the CLI, a test) and handed to both
 * transports; nothing is set on it afterwards.
 *
 * No command takes all of it: each declares the members it reads (`needs`, src/domain/command.ts)
 * and is typed with only those (`Ports<...>`), as is every helper it calls. The feed's
 * consumers are attached in one place, `wireChangeFeed` below.
 */
import type { Config } from "../config.js";
import { LocalChangeFeed } from "./local-feed.js";
import type { ChangeFeed } from "./ports/change-feed.js";
import type { Locks } from "./ports/locks.js";
import type { Peers } from "./ports/peers.js";
import type { Exporter, SeedParser } from "./ports/formats.js";
import type { Store } from "./ports/store.js";
import { KeyedLock } from "./keyed-lock.js";
import { committedUnder } from "./durability.js";
import type { Clock } from "./ports/clock.js";
import { systemClock } from "./ports/clock.js";
import type { PasswordHasher } from "./ports/password-hasher.js";
import { unthrottledAttempts, type LoginAttempts } from "./ports/login-attempts.js";
import { LiveStreams } from "./live.js";
import { Presence } from "./presence.js";
import { ReadModel } from "./read-model.js";
import { TreeRevisions } from "./tree-revisions.js";
import { TreeRaces } from "./tree-races.js";

export interface DomainContext {
  readonly store: Store;
  readonly config: Config;
  /** The formats, as ports (src/formats/off-thread.ts in the server and the CLI). */
  readonly seeds: SeedParser;
  readonly exporter: Exporter;
  /** Hears every committed change (SPEC §10); its consumers are attached in `wireChangeFeed`. */
  readonly feed: ChangeFeed;
  /** The other processes sharing the store (SPEC §11), for what is not a change (failed log-ins, sign-ups). */
  readonly peers: Peers;
  readonly hasher: PasswordHasher;
  /**
   * Where a typed password other than a log-in's is checked as a log-in attempt: the server's
   * credential checker (src/auth/credentials.ts, built before the context); the CLI and the
   * domain's tests keep the default, which throttles nothing.
   */
  readonly loginAttempts: LoginAttempts;
  /** The time stamped on what the commands write. */
  readonly clock: Clock;
  readonly treeLocks: KeyedLock;
  /** Held by writes that add cards to a user's trees while they count against the user's limit. */
  readonly ownerLocks: Locks;
  /** Trees other processes write too, whose writes then take turns across processes. */
  readonly treeRaces: TreeRaces;
  /** Each tree's latest revision as the feed published it. */
  readonly treeRevisions: TreeRevisions;
  /** Whole trees as both transports read them, kept current from the feed. */
  readonly readModel: ReadModel;
  /** Open live streams (SSE and GraphQL subscriptions), their limits. */
  readonly live: LiveStreams;
  /** Who has which tree open, on which card (memory only, shared with the other processes through `peers`). */
  readonly presence: Presence;
}

/**
 * The members of the context a command or helper reads, and no others: `Ports<"store" | "clock">`.
 * A full `DomainContext` is one, so the transports hand theirs on as it is.
 */
export type Ports<K extends keyof DomainContext> = Pick<DomainContext, K>;

/** A process alone on its store tells nobody anything. */
export const NO_PEERS: Peers = {
  loginFailed: () => undefined,
  onLoginFailed: () => () => undefined,
  credentialsVerified: () => undefined,
  onCredentialsVerified: () => () => undefined,
  onSignedOut: () => () => undefined,
  signedUp: () => undefined,
  onSignedUp: () => () => undefined,
  treeContended: () => undefined,
  onTreeContended: () => () => undefined,
  presence: () => undefined,
  onPresence: () => () => undefined,
};

/** What the composition root (the server, the CLI, a test) plugs into the domain's ports. */
export interface DomainAdapters {
  formats: SeedParser & Exporter;
  hasher: PasswordHasher;
  /** The system clock when absent. */
  clock?: Clock;
  /** The server's credential checker; absent (the CLI, the domain's tests), nothing is throttled. */
  loginAttempts?: LoginAttempts;
  /**
   * For a store other processes share (PostgreSQL, src/store/postgres/): the change feed
   * across them, the channel to them, the owner locks they all respect and the locks their
   * writes to a contended tree take turns on; absent, all stay within this process.
   */
  shared?: { feed?: ChangeFeed; peers?: Peers; ownerLocks?: Locks; treeLocks?: Locks };
}

export function createDomainContext(
  store: Store,
  config: Config,
  { formats, hasher, clock = systemClock, loginAttempts = unthrottledAttempts, shared = {} }: DomainAdapters,
): DomainContext {
  const feed = shared.feed ?? new LocalChangeFeed();
  const peers = shared.peers ?? NO_PEERS;
  const treeLocks = new KeyedLock();
  const live = new LiveStreams(config.live, peers);
  const ctx: DomainContext = {
    presence: new Presence({ store, feed, peers, live }),
    store,
    config,
    seeds: formats,
    exporter: formats,
    feed,
    hasher,
    loginAttempts,
    clock,
    treeLocks,
    ownerLocks: committedUnder(shared.ownerLocks ?? new KeyedLock()),
    treeRaces: new TreeRaces(shared.treeLocks, peers),
    peers,
    treeRevisions: new TreeRevisions(feed),
    readModel: new ReadModel({ store, treeLocks, othersWrite: shared.feed !== undefined }, config.readModelCards),
    live,
  };
  wireChangeFeed(ctx);
  return ctx;
}

/**
 * Every consumer of the change feed, attached here and nowhere else: to follow a write to
 * what it updates, read this function. A committed change (`commitChange`, changes.ts)
 * reaches them in this order, each on its own listener so that one that throws does not
 * keep the notice from the next:
 *
 * 1. `treeRevisions`: each tree's latest revision, which GraphQL's result cache asks
 *    before it answers from memory (tree-revisions.ts);
 * 2. `readModel`: the whole trees both transports read, brought to the new revision
 *    (read-model.ts); after a bulk write it also hands the tree's next snapshot to the one
 *    preparer the REST transport sets (src/rest/api.ts: the card list's compressed copy);
 * 3. `live`: the live streams following that tree, SSE and GraphQL subscriptions (live.ts).
 * 4. the store, when it keeps busy trees for their next write (PostgreSQL: a change another
 *    process made drops this process's older copy; postgres/kept-reads.ts).
 *
 * Not yet here: presence (presence.ts, merged from another branch at the same time) still
 * subscribes to each open tree's notices itself.
 *
 * When a feed shared by processes may have missed notices (its link came back), the
 * revisions start a new epoch (so nothing cached is trusted), and every stream catches up
 * from the log and ends if the store no longer grants the access it was opened with.
 */
export function wireChangeFeed({ feed, treeRevisions, readModel, live, store }: Ports<"feed" | "treeRevisions" | "readModel" | "live" | "store">): void {
  feed.subscribeAll((notice) => treeRevisions.hear(notice));
  feed.subscribeAll((notice) => readModel.hear(notice));
  feed.subscribeAll((notice) => live.hear(notice));
  if (store.heard) feed.subscribeAll((notice) => store.heard?.(notice));
  feed.subscribeResync(() => {
    treeRevisions.resync();
    live.catchUpAll();
    live.recheckAccess(store).catch(() => undefined);
  });
}
