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
import { loadSettings, type Settings } from "./settings.js";
import type { WriteFaults } from "./write-faults.js";

export interface OpenedStore {
  store: Store;
  settings: Settings;
  /** Resolves when the store's server answers (PostgreSQL); absent for an embedded store. */
  probe?: () => Promise<void>;
}

type Log = (message: string, fields: Record<string, unknown>) => void;

export interface OpenStoreOptions {
  /** Where failures and repairs are reported. */
  log?: Log;
  /** Where what opening did is reported (schema migrations). */
  info?: Log;
  /** Failures to inject into NeDB's appends (the reliability tests). */
  faults?: WriteFaults;
}

export async function openStore(config: Config, options: OpenStoreOptions = {}): Promise<OpenedStore> {
  if (config.store.engine === "postgres") {
    const { openPostgresStore } = await import("./postgres-store.js");
    const store = await openPostgresStore(config.store.databaseUrl, {
      log: options.log,
      info: options.info,
      poolSize: config.store.poolSize,
    });
    try {
      return { store, settings: await store.settings(), probe: () => store.ping() };
    } catch (err) {
      await store.close();
      throw err;
    }
  }
  const { openNedbStore } = await import("./nedb-store.js");
  const store = await openNedbStore(config.dataDir, { log: options.log, compaction: config.compaction, faults: options.faults });
  try {
    return { store, settings: await loadSettings(config.dataDir) };
  } catch (err) {
    await store.close();
    throw err;
  }
}
