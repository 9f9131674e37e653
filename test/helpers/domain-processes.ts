/**
 * Server processes on one PostgreSQL database, as domain contexts, for tests of what two
 * processes do to one tree (test/postgres/tree-races, kept-reads). Each has its own store
 * pool, notice connection and pool of lock connections, as two `npm start` processes have.
 */
import { randomUUID } from "node:crypto";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import { loadConfig } from "../../src/config.js";
import { createDomainContext, type DomainContext } from "../../src/domain/context.js";
import type { Store } from "../../src/domain/ports/store.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import { PostgresChangeFeed } from "../../src/store/postgres/change-feed.js";
import { PostgresLocks } from "../../src/store/postgres/locks.js";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres-store.js";

const quiet = () => undefined;

export class DomainProcesses {
  private readonly stores: PostgresStore[] = [];
  private readonly locks: PostgresLocks[] = [];
  private readonly feeds: PostgresChangeFeed[] = [];

  constructor(private readonly url: string) {}

  /**
   * A process of its own. `adapt` gives the domain its store: the opened one, or a wrapper
   * of it (counting, holding commits); `self` is the process's context, once made.
   */
  async start(adapt: (store: PostgresStore, self: () => DomainContext) => Store = (store) => store): Promise<DomainContext> {
    const origin = randomUUID();
    const store = await openPostgresStore(this.url, { log: quiet, origin });
    this.stores.push(store);
    const feed = new PostgresChangeFeed(this.url, origin, quiet);
    await feed.start();
    this.feeds.push(feed);
    const treeLocks = new PostgresLocks(this.url, { name: "cardtree-test-tree-locks" });
    this.locks.push(treeLocks);
    const config = loadConfig({ SIGNUP: "open", EXPORT_WORKERS: "0", STORE: "postgres", DATABASE_URL: this.url });
    const ctx: DomainContext = createDomainContext(
      adapt(store, () => ctx),
      config,
      { formats: formatsOffThread(config.exports), hasher: scryptHasherFor(config.limits), shared: { feed, peers: feed, treeLocks } },
    );
    return ctx;
  }

  /** Closes every process's connections: notices first, then locks, then the pools. */
  async close(): Promise<void> {
    for (const feed of this.feeds) await feed.close();
    for (const lock of this.locks) await lock.close();
    for (const store of this.stores) await store.close();
  }
}
