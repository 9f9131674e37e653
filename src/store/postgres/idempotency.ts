/**
 * Idempotency keys on PostgreSQL (SPEC §13): the `idempotency_keys` table (migration 4),
 * shared by every process. A claim is an insert that the primary key (user, key) lets only
 * one process make; taking over, renewing, completing and releasing are updates and deletes
 * conditioned on the claim's token, so a process whose claim was taken over changes nothing.
 */
import type pg from "pg";
import type { IdempotencyRecord, IdempotencyRepository } from "../../domain/ports/store.js";

interface KeyRow {
  user_id: string;
  key: string;
  fingerprint: string;
  claim: string | null;
  lease_until: string;
  created_at: string;
  expires_at: string;
  status: number | null;
  headers: Record<string, string> | null;
  body: Buffer | null;
}

function fromRow(row: KeyRow): IdempotencyRecord {
  const record: IdempotencyRecord = {
    userId: row.user_id,
    key: row.key,
    fingerprint: row.fingerprint,
    leaseUntil: row.lease_until,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
  if (row.claim !== null) record.claim = row.claim;
  if (row.status !== null) record.answer = { status: row.status, headers: row.headers ?? {}, body: row.body ?? Buffer.alloc(0) };
  return record;
}

function columns(record: IdempotencyRecord): unknown[] {
  return [record.userId, record.key, record.fingerprint, record.claim ?? null, record.leaseUntil, record.createdAt, record.expiresAt];
}

export function postgresIdempotency(pool: pg.Pool): IdempotencyRepository {
  return {
    claim: async (record) => {
      for (;;) {
        const inserted = await pool.query(
          `INSERT INTO idempotency_keys (user_id, key, fingerprint, claim, lease_until, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (user_id, key) DO NOTHING`,
          columns(record),
        );
        if (inserted.rowCount === 1) return null;
        const { rows } = await pool.query<KeyRow>("SELECT * FROM idempotency_keys WHERE user_id = $1 AND key = $2", [record.userId, record.key]);
        // Swept or released between the two statements: claim it again.
        if (rows.length > 0) return fromRow(rows[0]);
      }
    },
    takeOver: async (record, previousClaim) => {
      const replaced = await pool.query(
        `UPDATE idempotency_keys SET fingerprint = $3, claim = $4, lease_until = $5, created_at = $6, expires_at = $7,
           status = NULL, headers = NULL, body = NULL
         WHERE user_id = $1 AND key = $2 AND claim = $8`,
        [...columns(record), previousClaim],
      );
      return replaced.rowCount === 1;
    },
    renew: async (userId, key, claim, leaseUntil) => {
      await pool.query("UPDATE idempotency_keys SET lease_until = $4 WHERE user_id = $1 AND key = $2 AND claim = $3", [userId, key, claim, leaseUntil]);
    },
    complete: async (userId, key, claim, answer) => {
      await pool.query(
        `UPDATE idempotency_keys SET claim = NULL, status = $4, headers = $5, body = $6
         WHERE user_id = $1 AND key = $2 AND claim = $3`,
        [userId, key, claim, answer.status, JSON.stringify(answer.headers), Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength)],
      );
    },
    release: async (userId, key, claim) => {
      await pool.query("DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND claim = $3", [userId, key, claim]);
    },
    sweep: async (now, most) => {
      const expired = await pool.query("DELETE FROM idempotency_keys WHERE expires_at < $1", [now]);
      // Per user, the newest kept answers up to `most.keys` of them and `most.bytes` bytes;
      // only users past either are ranked at all.
      const over = await pool.query(
        `DELETE FROM idempotency_keys AS k USING (
           SELECT user_id, key FROM (
             SELECT user_id, key,
               row_number() OVER newest AS n,
               sum(coalesce(octet_length(body), 0)) OVER newest AS bytes
             FROM idempotency_keys
             WHERE claim IS NULL AND user_id IN (
               SELECT user_id FROM idempotency_keys WHERE claim IS NULL GROUP BY user_id
               HAVING count(*) > $1 OR sum(coalesce(octet_length(body), 0)) > $2)
             WINDOW newest AS (PARTITION BY user_id ORDER BY created_at DESC, key DESC)
           ) AS ranked WHERE n > $1 OR bytes > $2
         ) AS dropped
         WHERE k.user_id = dropped.user_id AND k.key = dropped.key`,
        [most.keys, most.bytes],
      );
      return (expired.rowCount ?? 0) + (over.rowCount ?? 0);
    },
  };
}
