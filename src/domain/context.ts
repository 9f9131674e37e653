/**
 * What every domain command needs: the store, the configuration, the password hasher, the
 * per-tree and per-owner write locks, the change feed and what follows it (the read model,
 * the trees' latest revisions, live streams). Built once at start-up and handed to both
 * transports.
 */
import type { Config } from "../config.js";
import { LocalChangeFeed } from "./local-feed.js";
import type { ChangeFeed } from "./ports/change-feed.js";
import type { Exporter, SeedParser } from "./ports/formats.js";
import type { Store } from "./ports/store.js";
import { KeyedLock } from "./keyed-lock.js";
import { PasswordHasher } from "./passwords.js";
import { LiveStreams } from "./live.js";
import { ReadModel } from "./read-model.js";
import { TreeRevisions } from "./tree-revisions.js";

export interface DomainContext {
  store: Store;
  config: Config;
  /** The formats, as ports (src/formats/off-thread.ts in the server and the CLI). */
  seeds: SeedParser;
  exporter: Exporter;
  /** Hears every committed change (SPEC §10): live streams and caches listen here. */
  feed: ChangeFeed;
  hasher: PasswordHasher;
  treeLocks: KeyedLock;
  /** Held by writes that add cards to a user's trees while they count against the user's limit. */
  ownerLocks: KeyedLock;
  /** Each tree's latest revision as the feed published it. */
  treeRevisions: TreeRevisions;
  /** Whole trees as both transports read them, kept current from the feed. */
  readModel: ReadModel;
  /** Open live streams (SSE and GraphQL subscriptions), their limits. */
  live: LiveStreams;
}

export function createDomainContext(store: Store, config: Config, formats: SeedParser & Exporter): DomainContext {
  const feed = new LocalChangeFeed();
  const treeLocks = new KeyedLock();
  return {
    store,
    config,
    seeds: formats,
    exporter: formats,
    feed,
    hasher: new PasswordHasher(config.limits.concurrentHashes, {
      perKey: config.limits.hashesPerAddress,
      queue: config.limits.hashQueue,
    }),
    treeLocks,
    ownerLocks: new KeyedLock(),
    treeRevisions: new TreeRevisions(feed),
    readModel: new ReadModel({ store, feed, treeLocks }, config.readModelCards),
    live: new LiveStreams(config.live),
  };
}
