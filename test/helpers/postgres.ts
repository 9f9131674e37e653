/**
 * Which store the integration tests run against, and a fresh PostgreSQL database for each
 * server they start. `CARDTREE_TEST_STORE=postgres` (the vitest project "postgres" sets it)
 * switches the helpers in server.ts and in-process-server.ts to PostgreSQL; the server the
 * databases live on is found or started by test/postgres-setup.ts, which also drops every
 * database of the run at the end.
 */
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import pg from "pg";

export type TestStore = "nedb" | "postgres";

export const TEST_STORE: TestStore = process.env.CARDTREE_TEST_STORE === "postgres" ? "postgres" : "nedb";

/** The connection to the test server's `postgres` database, from which databases are made. */
export function adminUrl(): string {
  const url = process.env.CARDTREE_TEST_ADMIN_URL;
  if (!url) {
    throw new Error(
      "No PostgreSQL for the tests: test/postgres-setup.ts sets CARDTREE_TEST_ADMIN_URL; run the tests through vitest's postgres project (npm test).",
    );
  }
  return url;
}

/** Every database of this run starts with this, so the teardown finds them all. */
export function databasePrefix(run = process.env.CARDTREE_TEST_RUN ?? "x"): string {
  return `cardtree_test_${run}_`;
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

export async function adminQuery<T extends pg.QueryResultRow = any>(sql: string, url = adminUrl(), params: unknown[] = []): Promise<pg.QueryResult<T>> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await client.query<T>(sql, params);
  } finally {
    await client.end();
  }
}

/** A new, empty database; resolves to its URL. */
export async function createTestDatabase(): Promise<string> {
  const name = `${databasePrefix()}${randomBytes(6).toString("hex")}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  return withDatabase(adminUrl(), name);
}

/** Drops the database, even with connections still open to it. */
export async function dropTestDatabase(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  if (!name.startsWith("cardtree_test_")) throw new Error(`not a test database: ${name}`);
  await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/** Where a data directory records the database its servers use, so a restart finds it again. */
const MARKER = "test-database-url";

/**
 * The environment that points a server at the test store: nothing for NeDB (the data
 * directory is the store); for PostgreSQL, the database belonging to this data directory,
 * made on first use.
 */
export async function storeEnv(dataDir: string): Promise<Record<string, string>> {
  if (TEST_STORE === "nedb") return {};
  const marker = path.join(dataDir, MARKER);
  let url = await readFile(marker, "utf8").catch(() => "");
  if (!url) {
    url = await createTestDatabase();
    await writeFile(marker, url);
  }
  return { STORE: "postgres", DATABASE_URL: url };
}

/**
 * The instance secret a test server keys sessions with: in `settings.json` of the data
 * directory, or in the settings table of its database.
 */
export async function instanceSecret(dataDir: string): Promise<string> {
  const url = await readFile(path.join(dataDir, MARKER), "utf8").catch(() => "");
  if (!url) return (JSON.parse(await readFile(path.join(dataDir, "settings.json"), "utf8")) as { secret: string }).secret;
  const { rows } = await adminQuery("SELECT value FROM settings WHERE key = 'secret'", url);
  return (rows[0] as { value: string }).value;
}

/**
 * Reads of a test database at `url()` (read when called: suites set it in `beforeAll`) that the
 * ahead-of-commit suites share: plain rows, a tree's change log by transaction, and its cards'
 * contents.
 */
export function treeQueries(url: () => string) {
  async function sql<R>(query: string, params: unknown[] = []): Promise<R[]> {
    return (await adminQuery(query, withDatabase(url(), new URL(url()).pathname.slice(1)), params)).rows as R[];
  }
  /** The tree's logged revisions, in order, and how many each transaction wrote. */
  async function logOf(treeId: string): Promise<{ revisions: number[]; perTransaction: number[] }> {
    const rows = await sql<{ revision: number; tx: string }>("SELECT revision, xmin::text AS tx FROM changes WHERE tree_id = $1 ORDER BY revision", [treeId]);
    const counts = new Map<string, number>();
    for (const row of rows) counts.set(row.tx, (counts.get(row.tx) ?? 0) + 1);
    return { revisions: rows.map((r) => r.revision), perTransaction: [...counts.values()] };
  }
  /** The contents of the tree's live cards but its first, empty one, sorted. */
  async function contentsOf(treeId: string): Promise<string[]> {
    const rows = await sql<{ content: string }>(
      "SELECT record->>'content' AS content FROM cards WHERE tree_id = $1 AND trashed IS NULL AND record->>'content' <> ''",
      [treeId],
    );
    return rows.map((r) => r.content).sort();
  }
  return { sql, logOf, contentsOf };
}

/**
 * Holds a process's next statement of a given name, for tests that must act while it waits:
 * `hold(name)` arms it (`reached` once the statement waits, `release` sends it); the test's
 * wrapper of the pool's `query` awaits `passing(name)` before each statement.
 */
export class StatementHold {
  private next: { name: string; reached: () => void; released: Promise<void> } | undefined;

  hold(name: string): { reached: Promise<void>; release: () => void } {
    let release!: () => void;
    let reached!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const arrived = new Promise<void>((resolve) => (reached = resolve));
    this.next = { name, reached, released };
    return { reached: arrived, release };
  }

  /** Resolves at once, or once released when `name` is the statement held. */
  async passing(name: string | undefined): Promise<void> {
    const hold = this.next;
    if (!hold || name !== hold.name) return;
    this.next = undefined;
    hold.reached();
    await hold.released;
  }
}
