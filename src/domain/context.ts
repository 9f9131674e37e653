/**
 * What every domain command needs: the store, the configuration, the password hasher, the
 * per-tree and per-owner write locks, the change feed and what follows it (the read model,
 * the trees' latest revisions, live streams). Built once at start-up and handed to both
 * transports.
 */
import type { Config } from "../config.js";
import { LocalChangeFeed } from "./local-feed.js";
import type { ChangeFeed } from "./ports/change-feed.js";
import type { Locks } from "./ports/locks.js";
import type { Peers } from "./ports/peers.js";
import type { Exporter, SeedParser } from "./ports/formats.js";
import type { Store } from "./ports/store.js";
import { KeyedLock } from "./keyed-lock.js";
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
  store: Store;
  config: Config;
  /** The formats, as ports (src/formats/off-thread.ts in the server and the CLI). */
  seeds: SeedParser;
  exporter: Exporter;
  /** Hears every committed change (SPEC §10): live streams and caches listen here. */
  feed: ChangeFeed;
  /** The other processes sharing the store (SPEC §11), for what is not a change (failed log-ins, sign-ups). */
  peers: Peers;
  hasher: PasswordHasher;
  /**
   * Where a typed password other than a log-in's is checked as a log-in attempt. The server
   * plugs in its credential checker once it is built on this context (src/app.ts); the CLI
   * and the domain's tests keep the default, which throttles nothing.
   */
  loginAttempts: LoginAttempts;
  /** The time stamped on what the commands write. */
  clock: Clock;
  treeLocks: KeyedLock;
  /** Held by writes that add cards to a user's trees while they count against the user's limit. */
  ownerLocks: Locks;
  /** Trees other processes write too, whose writes then take turns across processes. */
  treeRaces: TreeRaces;
  /** Each tree's latest revision as the feed published it. */
  treeRevisions: TreeRevisions;
  /** Whole trees as both transports read them, kept current from the feed. */
  readModel: ReadModel;
  /** Open live streams (SSE and GraphQL subscriptions), their limits. */
  live: LiveStreams;
  /** Who has which tree open, on which card (memory only, shared with the other processes through `peers`). */
  presence: Presence;
}

/** A process alone on its store tells nobody anything. */
const NO_PEERS: Peers = {
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
  { formats, hasher, clock = systemClock, shared = {} }: DomainAdapters,
): DomainContext {
  const feed = shared.feed ?? new LocalChangeFeed();
  const peers = shared.peers ?? NO_PEERS;
  const treeLocks = new KeyedLock();
  const live = new LiveStreams(config.live, peers);
  // Notices from other processes may have been missed: every stream catches up from the
  // log, and ends if the store no longer grants the access it was opened with.
  feed.subscribeResync(() => {
    live.catchUpAll();
    live.recheckAccess(store).catch(() => undefined);
  });
  const presence = new Presence({ store, feed, peers, live });
  return {
    presence,
    store,
    config,
    seeds: formats,
    exporter: formats,
    feed,
    hasher,
    loginAttempts: unthrottledAttempts,
    clock,
    treeLocks,
    ownerLocks: shared.ownerLocks ?? new KeyedLock(),
    treeRaces: new TreeRaces(shared.treeLocks, peers),
    peers,
    treeRevisions: new TreeRevisions(feed),
    readModel: new ReadModel({ store, feed, treeLocks, othersWrite: shared.feed !== undefined }, config.readModelCards),
    live,
  };
}
