/**
 * One statement on a connection of its own, for the benchmarks that make and drop their own
 * databases: the PostgreSQL at DATABASE_URL, or the local one.
 */
import pg from "pg";

/** The server's maintenance database, where databases are created and dropped. */
export const ADMIN_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** Runs `sql` (with `params`, if any) on `url` (the admin database when absent) and returns its rows. */
export async function queryOnce<T extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, url = ADMIN_URL, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** `url` with its database replaced by `database`. */
export function databaseUrl(database: string, url = ADMIN_URL): string {
  const at = new URL(url);
  at.pathname = `/${database}`;
  return at.toString();
}
