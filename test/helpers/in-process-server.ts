/**
 * Starts the real server inside the test process, for tests that need to look inside
 * (count store reads, set a user's limit), with a fresh data directory, or a fresh
 * database under `CARDTREE_TEST_STORE=postgres` (dropped when the server stops).
 */
import { rm } from "node:fs/promises";
import { Worker } from "node:worker_threads";
import { loadConfig } from "../../src/config.js";
import { EXPORT_WORKER_ROLE } from "../../src/formats/export/worker-pool.js";
import { installWorkerStarter } from "../../src/formats/worker-start.js";
import { startServer, type RunningServer } from "../../src/server.js";
import type { Store } from "../../src/domain/ports/store.js";
import { countingReads } from "./counting-store.js";
import { dropTestDatabase, storeEnv } from "./postgres.js";
import { freshDataDir } from "./server.js";

export interface InProcessServer extends RunningServer {
  dataDir: string;
  /** Store reads made by the domain since start. */
  reads: { count: number };
  stop(): Promise<void>;
}

/**
 * Export and seed workers run the compiled worker module (dist/, built from the working tree
 * by test/global-setup.ts), as the child-process servers' do: from the sources, each worker
 * registers tsx and compiles the formats again (about 3 s at load average 14, against 1 s).
 * Without the build (a run that skipped the global set-up) workers start from the sources.
 */
const compiledWorker = process.env.CARDTREE_TEST_EXPORT_WORKER;
if (compiledWorker) {
  installWorkerStarter((role, _file, options) => {
    if (role !== EXPORT_WORKER_ROLE) throw new Error(`no compiled worker for ${role}`);
    return new Worker(compiledWorker, options);
  });
}

/** `decorate` wraps the store the domain is given, inside the read counter (a test's injected fault). */
export async function startInProcessServer(env: Record<string, string> = {}, decorate?: (store: Store) => Store): Promise<InProcessServer> {
  const dataDir = await freshDataDir();
  const store = await storeEnv(dataDir);
  // The run's cheap password hashes (vitest.config.ts), as the child-process servers inherit them.
  const hashCost = process.env.PASSWORD_HASH_COST ? { PASSWORD_HASH_COST: process.env.PASSWORD_HASH_COST } : {};
  const config = loadConfig({ PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, LOG: "off", ...hashCost, ...store, ...env });
  let reads = { count: 0 };
  const running = await startServer(config, {
    decorateStore: (store) => {
      const counting = countingReads(decorate?.(store) ?? store);
      reads = counting.reads;
      return counting.store;
    },
  });
  return {
    ...running,
    dataDir,
    reads,
    stop: async () => {
      await running.close();
      if (store.DATABASE_URL) await dropTestDatabase(store.DATABASE_URL);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
