/**
 * Locks every process sharing the database respects (the `Locks` port): PostgreSQL's
 * session advisory locks, one per key (`pg_advisory_lock` on a 64-bit hash of it). Used for
 * the owner's steps that count and then write (the card limit, a user's scripts and
 * preferences), which the in-process queue alone would let two processes interleave, and,
 * in a second instance with a pool of its own, for writes to a tree several processes
 * contend for (domain/tree-races.ts), which may hold an owner's lock inside a tree's.
 *
 * - Within the process, holders of one key queue in memory first (domain/keyed-lock.ts), so
 *   a process waits in the database with at most one connection per key.
 * - The lock is held on a connection of a small pool of its own: the work under the lock
 *   reads and writes through the store's pool, and could not get a connection if the lock
 *   holders had taken them all.
 * - A holder whose process dies loses the lock with its connection; waiting more than
 *   `lock_timeout` (15 s) for one, or not reaching the database, answers `unavailable`.
 * - Two keys can hash alike (1 in 2^64): they then merely wait for each other.
 */
import pg from "pg";
import { KeyedLock } from "../../domain/keyed-lock.js";
import type { Locks } from "../../domain/ports/locks.js";
import { UnavailableError } from "../../shared/errors.js";

const LOCK_TIMEOUT_MS = 15_000;

export class PostgresLocks implements Locks {
  private readonly local = new KeyedLock();
  private readonly pool: pg.Pool;
  private readonly busy: string;

  constructor(
    databaseUrl: string,
    options: {
      size?: number;
      log?: (message: string, fields: Record<string, unknown>) => void;
      /** The pool's name in pg_stat_activity. */
      name?: string;
      /** The 503's message when a lock is not had within the lock timeout. */
      busy?: string;
    } = {},
  ) {
    this.busy = options.busy ?? "Another request held this account's cards too long; nothing was changed. Try again in a moment.";
    this.pool = new pg.Pool({
      connectionString: databaseUrl,
      max: options.size ?? 4,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: options.name ?? "cardtree-locks",
      options: `-c lock_timeout=${LOCK_TIMEOUT_MS}`,
    });
    this.pool.on("error", (err) => options.log?.("a lock connection failed; it will be replaced", { error: String(err) }));
  }

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    return this.local.run(key, async () => {
      let client: pg.PoolClient;
      try {
        client = await this.pool.connect();
      } catch {
        throw new UnavailableError();
      }
      let broken = false;
      const onError = () => {
        broken = true;
      };
      client.on("error", onError);
      try {
        try {
          await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [`cardtree:${key}`]);
        } catch (err) {
          broken = true;
          throw (err as { code?: string }).code === "55P03"
            ? new UnavailableError(this.busy)
            : new UnavailableError();
        }
        try {
          return await work();
        } finally {
          await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [`cardtree:${key}`]).catch(() => {
            // Not unlocked: the connection must not go back to the pool still holding it.
            broken = true;
          });
        }
      } finally {
        client.off("error", onError);
        client.release(broken);
      }
    });
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
