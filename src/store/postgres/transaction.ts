/** One transaction on one pooled connection, for the PostgreSQL store and its migrations. */
import type pg from "pg";

/**
 * Runs `work` between BEGIN and COMMIT on one connection; rolls back and rethrows when it
 * throws. A connection whose rollback fails is broken and is discarded, not pooled again.
 *
 * While the connection is checked out the pool does not listen for its errors, and `pg`
 * emits an error that arrives between two statements (the server shutting down: 57P01) as
 * an event: with no listener that would end the process. It is heard here instead; the
 * statement after it fails, and the connection is discarded.
 */
export async function transaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on("error", onError);
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
    client.off("error", onError);
    client.release(broken);
  }
}
