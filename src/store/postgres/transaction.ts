/** One transaction on one pooled connection, for the PostgreSQL store and its migrations. */
import type pg from "pg";

/**
 * Runs `work` between BEGIN and COMMIT on one connection; rolls back and rethrows when it
 * throws. A connection whose rollback fails is broken and is discarded, not pooled again.
 */
export async function transaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN");
    try {
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {
        broken = true;
      });
      throw err;
    }
  } finally {
    client.release(broken);
  }
}
