/**
 * Brings a database's schema up to date at start: every migration not yet recorded in
 * `schema_migrations` runs, in order, all in one transaction (a failure leaves the schema
 * as it was). A transaction-scoped advisory lock makes processes that start together take
 * turns: the first migrates, the others then find nothing left to do.
 */
import type { Pool, PoolClient } from "pg";
import { MIGRATIONS, type Migration } from "./migrations.js";
import { transaction } from "./transaction.js";

/** Any fixed 64-bit key, the same in every process of this program ("cardtree" in ASCII). */
const MIGRATION_LOCK = "7161128316424267109";

export interface MigrationReport {
  /** Versions applied by this call (empty when the schema was up to date). */
  applied: number[];
  /** The schema's version now. */
  version: number;
}

export function migrate(pool: Pool, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationReport> {
  return transaction(pool, (client) => migrateInTransaction(client, migrations));
}

async function migrateInTransaction(client: PoolClient, migrations: readonly Migration[]): Promise<MigrationReport> {
  await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
  await client.query(`
    CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
  const { rows } = await client.query<{ version: number }>("SELECT version FROM schema_migrations");
  const done = new Set(rows.map((r) => r.version));
  const known = migrations.reduce((most, m) => Math.max(most, m.version), 0);
  const newest = Math.max(0, ...done);
  if (newest > known) {
    throw new Error(
      `The database's schema is at version ${newest}, newer than this program knows (${known}): run a newer Cardtree, or another database.`,
    );
  }
  const applied: number[] = [];
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(migration.version)) continue;
    await client.query(migration.sql);
    await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [migration.version, migration.name]);
    applied.push(migration.version);
  }
  return { applied, version: Math.max(newest, ...applied) };
}
