/**
 * Opens the store the configuration names (`STORE`, SPEC §11) with the instance settings
 * that go with it: NeDB files and `settings.json` in the data directory (which a lock then
 * holds for this process), or a PostgreSQL database, which any number of processes share,
 * and whose settings table holds the secret they must all use. Each engine's module (and its
 * driver: NeDB, or `pg`) is imported only when chosen, so a process does not spend its
 * start-up loading the other one.
 */
import type { Config } from "../config.js";
import type { Store } from "../domain/ports/store.js";
import { randomUUID } from "node:crypto";
import type { PostgresChangeFeed } from "./postgres/change-feed.js";
import type { PostgresLocks } from "./postgres/locks.js";
import { loadSettings, type Settings } from "./settings.js";
import type { WriteFaults } from "./write-faults.js";

export interface OpenedStore {
  store: Store;
  settings: Settings;
  /**
   * The change feed across processes (PostgreSQL: LISTEN/NOTIFY, postgres/change-feed.ts),
   * listening already; absent for an embedded store, whose one process feeds itself.
   * Close it before the store.
   */
  feed?: PostgresChangeFeed;
  /** Locks every process sharing the database respects (PostgreSQL advisory locks); close after use. */
  locks?: PostgresLocks;
  /** The same for writes to contended trees, on connections of their own (domain/tree-races.ts); close after use. */
  treeLocks?: PostgresLocks;
  /** Resolves when the store's server answers (PostgreSQL); absent for an embedded store. */
  probe?: () => Promise<void>;
}

type Log = (message: string, fields: Record<string, unknown>) => void;

export interface OpenStoreOptions {
  /** Where failures and repairs are reported. */
  log?: Log;
  /** Where what opening did is reported (schema migrations). */
  info?: Log;
  /** false: no change feed from other processes (the CLI, which follows nobody). */
  listen?: boolean;
  /** Failures to inject into NeDB's appends (the reliability tests). */
  faults?: WriteFaults;
}

export async function openStore(config: Config, options: OpenStoreOptions = {}): Promise<OpenedStore> {
  if (config.store.engine === "postgres") {
    const origin = randomUUID();
    const [{ openPostgresStore }, { PostgresChangeFeed }, { PostgresLocks }] = await Promise.all([
      import("./postgres-store.js"),
      import("./postgres/change-feed.js"),
      import("./postgres/locks.js"),
    ]);
    const store = await openPostgresStore(config.store.databaseUrl, {
      log: options.log,
      info: options.info,
      poolSize: config.store.poolSize,
      origin,
    });
    const feed = options.listen === false ? undefined : new PostgresChangeFeed(config.store.databaseUrl, origin, options.log);
    const locks = new PostgresLocks(config.store.databaseUrl, { log: options.log });
    const treeLocks = new PostgresLocks(config.store.databaseUrl, {
      log: options.log,
      name: "cardtree-tree-locks",
      busy: "Other writes held this tree too long; nothing was changed. Try again in a moment.",
    });
    try {
      await feed?.start();
      return { store, settings: await store.settings(), probe: () => store.ping(), feed, locks, treeLocks };
    } catch (err) {
      await feed?.close();
      await locks.close();
      await treeLocks.close();
      await store.close();
      throw err;
    }
  }
  const { openNedbStore } = await import("./nedb-store.js");
  const store = await openNedbStore(config.dataDir, {
    log: options.log,
    info: options.info,
    compaction: config.compaction,
    faults: options.faults,
    sync: config.sync,
  });
  try {
    return { store, settings: await loadSettings(config.dataDir) };
  } catch (err) {
    await store.close();
    throw err;
  }
}
