/**
 * A PostgreSQL database of a test file's own, for tests that open stores on it directly:
 * made before the file's tests, dropped after them; each test's stores are closed after it.
 * Call at the top level of the file (it registers the hooks).
 */
import type pg from "pg";
import { afterAll, afterEach, beforeAll } from "vitest";
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from "../../src/store/postgres-store.js";
import { adminQuery, createTestDatabase, dropTestDatabase } from "./postgres.js";

export interface StoreDatabase {
  /** The database's URL (set once the file's tests start). */
  readonly url: string;
  /** A store on the database, closed after the test. */
  open(options?: PostgresStoreOptions): Promise<PostgresStore>;
  /** One statement on a connection of its own; its rows. */
  sql<T extends pg.QueryResultRow = any>(query: string, params?: unknown[]): Promise<T[]>;
}

export function storeDatabase(): StoreDatabase {
  let url = "";
  const opened: PostgresStore[] = [];
  beforeAll(async () => {
    url = await createTestDatabase();
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });
  afterAll(async () => {
    if (url) await dropTestDatabase(url);
  });
  return {
    get url() {
      return url;
    },
    open: async (options = {}) => {
      const store = await openPostgresStore(url, options);
      opened.push(store);
      return store;
    },
    sql: async (query, params = []) => (await adminQuery(query, url, params)).rows,
  };
}
