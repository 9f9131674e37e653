/**
 * Idempotency keys on PostgreSQL (SPEC §13): the `idempotency_keys` table (migration 4),
 * shared by every process. A claim is an insert that the primary key (user, key) lets only
 * one process make; taking over, renewing, completing and releasing are updates and deletes
 * conditioned on the claim's token, so a process whose claim was taken over changes nothing.
 *
 * Claims and answers are the two statements every keyed write makes of its own (the change
 * itself goes in the group commit's statement, group-commit.ts). Under load each took a
 * pooled connection and a round trip per write, which made a key cost PostgreSQL about 40%
 * of its write throughput. They are batched the same way: one statement in flight per kind;
 * the claims (answers) that arrive meanwhile go together in the next one, a lone one at
 * once. A batch's claims are one `INSERT ... ON CONFLICT DO NOTHING RETURNING claim`: a
 * claim returned was inserted (null, as `claim` says), the others met a record (or another
 * claim of the same key in the batch) and are asked again one by one, which reads it. A
 * batch's answers are one `UPDATE ... FROM unnest(...)` conditioned on each claim. A failed
 * batch fails each of its callers, as their own statement would have.
 *
 * An answer kept `lazily` (its request committed a change carrying the key, durably) is not
 * waited for: it rides in the next batch of claims (one statement for both), or goes alone
 * LAZY_MS later, and this process answers the key from memory meanwhile. A claim meeting
 * another process's running claim reads it again for a while before it says "in flight":
 * that process's answer may be on its way. A process killed before its lazy answer reached
 * the table leaves its claim to a take-over, which answers from the change: at once when
 * the claim names its process and that process's liveness lock is free (liveness.ts; the
 * claim is then reported with its lease ended), else once the lease ends.
 */
import { isUtf8 } from "node:buffer";
import type pg from "pg";
import type { IdempotencyRecord, IdempotencyRepository, KeptAnswer } from "../../domain/ports/store.js";
import type { ProcessLiveness } from "./liveness.js";

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

/** A claim's columns, in the order `idempotency_keys` takes them (group-commit.ts inserts claims too). */
export function claimColumns(record: IdempotencyRecord): unknown[] {
  return [record.userId, record.key, record.fingerprint, record.claim ?? null, record.leaseUntil, record.createdAt, record.expiresAt];
}

/** Items handed in while a batch is on its way go together in the next one. */
class Batches<T, R> {
  private waiting: { item: T; resolve: (value: R) => void; reject: (err: unknown) => void }[] = [];
  private inFlight = false;

  constructor(
    private readonly run: (items: T[]) => Promise<R[]>,
    /** An item's bytes: a batch closes once it holds MOST_BYTES (a big answer goes alone). */
    private readonly bytes: (item: T) => number = () => 0,
  ) {}

  add(item: T): Promise<R> {
    return this.addAll([item])[0];
  }

  /**
   * Items handed in together: one statement for all of them (bounds allowing) when none is
   * on its way. Added one by one, the first would go alone and the rest in a second statement.
   */
  addAll(items: readonly T[]): Promise<R>[] {
    const promises = items.map((item) => new Promise<R>((resolve, reject) => this.waiting.push({ item, resolve, reject })));
    this.pump();
    return promises;
  }

  private pump(): void {
    if (this.inFlight || this.waiting.length === 0) return;
    let count = 0;
    let bytes = 0;
    while (count < this.waiting.length && count < MOST_IN_A_BATCH && (count === 0 || bytes + this.bytes(this.waiting[count].item) <= MOST_BYTES)) {
      bytes += this.bytes(this.waiting[count].item);
      count++;
    }
    const batch = this.waiting.splice(0, count);
    this.inFlight = true;
    this.run(batch.map((b) => b.item))
      .then(
        (results) => batch.forEach((b, i) => b.resolve(results[i])),
        (err: unknown) => batch.forEach((b) => b.reject(err)),
      )
      .finally(() => {
        this.inFlight = false;
        this.pump();
      });
  }
}

/** Claims or answers one statement takes at most, and the most bytes of answers' bodies. */
const MOST_IN_A_BATCH = 256;
const MOST_BYTES = 4 * 1024 * 1024;

/**
 * How long an answer kept lazily waits for a batch of claims to carry it before it goes in
 * a statement with the others kept meanwhile. Each such statement is a transaction of its
 * own, whatever it carries, and under load it competed with the writes for the two sides'
 * CPU (docs/decisions.md, "Lazily kept answers together, every 100 ms"); the answer still
 * lands well within WAIT_FOR_ANSWER_MS, so another process's replay finds it.
 */
const LAZY_MS = 100;
/**
 * How often, and how long at most, a claim that meets another process's running claim reads
 * it again for an answer on its way (kept lazily there), before 409: LAZY_MS, the statement's
 * own time and a margin for a loaded machine.
 */
const REREAD_MS = 20;
const WAIT_FOR_ANSWER_MS = 500;
/** The lease a claim whose process is gone is reported with: ended, so the domain takes it over. */
const LEASE_ENDED = new Date(0).toISOString();

/**
 * A claim this process holds, and the row (`ctid`) it was inserted as when it was inserted
 * with its change: the row goes with its record. (In a WeakMap keyed by the record, as it
 * was, each keyed write left an ephemeron for every scavenge to look at until it was
 * cleared; a WeakMap set cost 1.7-2.4 µs in a bench loop, issue 26.)
 */
interface OwnClaim {
  record: IdempotencyRecord;
  row: string | undefined;
}

interface LazyAnswer {
  userId: string;
  key: string;
  claim: string;
  answer: KeptAnswer;
  /** The row (`ctid`) the claim was inserted as, when it was inserted with its change. */
  row?: string;
}

/**
 * A batch of claims. In key order, so two processes' batches claiming the same keys wait for
 * each other in the same order instead of deadlocking.
 */
const CLAIMS = `INSERT INTO idempotency_keys (user_id, key, fingerprint, claim, lease_until, created_at, expires_at)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
    AS c(user_id, key, fingerprint, claim, lease_until, created_at, expires_at)
  ORDER BY user_id, key
  ON CONFLICT (user_id, key) DO NOTHING RETURNING claim`;
/**
 * Kept answers, each ending its own claim only; the answers in one JSON parameter (`$first`),
 * as `answersJson` writes it. One JSON text, not six arrays: the driver escaped every element
 * of a `text[]` or `bytea[]` parameter in JavaScript (a regular-expression replace each, the
 * bodies as hexadecimal first), about 6 KiB of garbage a keyed write (issue 26's 10%), where
 * JSON.stringify is one native call. A body is its UTF-8 text (`t`), or base64 (`b`) when it
 * is not UTF-8 or holds a NUL byte (which PostgreSQL's text cannot).
 *
 * An answer whose claim was inserted with its change knows the row it was inserted as (`r`,
 * its `ctid`): it is updated there, one page read, where the primary key's descent cost
 * three more buffer accesses a keyed write (issue 26). The row is only where to look first:
 * the key and the claim must still be there, and an answer not found there (its claim's
 * lease was renewed, which wrote the row elsewhere on its page) goes by the key with those
 * that know no row. The two are parts of one statement (WITH clauses: PostgreSQL takes a
 * data-modifying one only at the top). The second leaves out what the first wrote before it
 * joins the table (`elsewhere`, computed once: the planner otherwise descended the primary
 * key for every answer first and dropped those the first part wrote after), and runs only
 * when something is left. The rows are also handed over as one array (`ctid = ANY`): the planner
 * takes json_to_recordset for 100 rows whatever it holds, and joined row by row it scanned
 * the whole table below some 3,000 keys, as the update by key alone did (EXPLAIN (ANALYZE,
 * BUFFERS) on tables of 1,000 and 3,000 keys, two answers: 104 and 304 buffers by key, 12
 * now; at 300 keys and below the table is scanned either way).
 */
const answersUpdate = (first: number): string => {
  const set = `claim = NULL, status = a.s, headers = a.h,
      body = CASE WHEN a.b IS NULL THEN convert_to(a.t, 'UTF8') ELSE decode(a.b, 'base64') END`;
  return `answers AS (
    SELECT * FROM json_to_recordset($${first}::json) AS a(u text, k text, c text, s integer, h json, t text, b text, r tid)
  ),
  answered_in_place AS (
    UPDATE idempotency_keys AS k SET ${set} FROM answers AS a
    WHERE k.ctid = ANY (ARRAY(SELECT r FROM answers WHERE r IS NOT NULL))
      AND k.ctid = a.r AND k.user_id = a.u AND k.key = a.k AND k.claim = a.c
    RETURNING k.user_id, k.key
  ),
  elsewhere AS (
    SELECT * FROM answers AS a WHERE NOT EXISTS (SELECT 1 FROM answered_in_place AS p WHERE p.user_id = a.u AND p.key = a.k)
  ),
  answered AS (
    UPDATE idempotency_keys AS k SET ${set} FROM elsewhere AS a
    WHERE EXISTS (SELECT 1 FROM elsewhere) AND k.user_id = a.u AND k.key = a.k AND k.claim = a.c
  )`;
};
/** Exported for the test that reads its plan (test/postgres/claim-leads-to-change.test.ts). */
export const ANSWERS = `WITH ${answersUpdate(1)} SELECT 1`;
/** The claims, carrying the answers kept lazily meanwhile (each conditioned on its claim). */
const CLAIMS_AND_ANSWERS = `WITH ${answersUpdate(8)} ${CLAIMS}`;
/** `String.prototype.isWellFormed` (Node 20 has it; the project's TypeScript lib predates it): no lone surrogate. */
const wellFormed = (text: string): boolean => (text as unknown as { isWellFormed(): boolean }).isWellFormed();
const answersJson = (kept: readonly LazyAnswer[]): string =>
  JSON.stringify(
    kept.map(({ userId, key, claim, answer: { status, headers, body, text }, row }) => {
      // The text the body was sent as, when it was: not decoded again. Not one with a lone
      // surrogate (its bytes hold U+FFFD there; PostgreSQL refuses the escape in JSON) or a NUL.
      if (text !== undefined && wellFormed(text) && !text.includes("\0")) return { u: userId, k: key, c: claim, s: status, h: headers, t: text, r: row };
      const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
      return isUtf8(bytes) && !bytes.includes(0)
        ? { u: userId, k: key, c: claim, s: status, h: headers, t: bytes.toString("utf8"), r: row }
        : { u: userId, k: key, c: claim, s: status, h: headers, b: bytes.toString("base64"), r: row };
    }),
  );

export function postgresIdempotency(
  pool: pg.Pool,
  log: (message: string, fields: Record<string, unknown>) => void,
  /**
   * Where the answers kept lazily are written: connections with `synchronous_commit` off
   * (postgres-store.ts). Such an answer needs no flush of its own, since the keyed change,
   * durable before the answer was sent, stands for it across a crash (the file's comment);
   * waiting for one cost every keyed write a WAL flush beside its change's. `pool` if absent.
   */
  lazyPool: pg.Pool = pool,
  /** Names this process in its claims and tells a dead process's claims (liveness.ts); absent: leases alone end claims. */
  liveness?: ProcessLiveness,
): IdempotencyRepository & {
  flush(): Promise<void>;
  /** A claim inserted with its change (group-commit.ts) as `row` (its ctid), now in the table: this process runs it. */
  claimedAtCommit(record: IdempotencyRecord, row?: string): void;
} {
  /**
   * Claims this process holds (by user and key), and the answers kept lazily that are not
   * in the table yet: a claim of such a key here is answered from memory.
   */
  const ownClaims = new Map<string, OwnClaim>();
  const lazy = new Map<string, LazyAnswer>();
  let lazyTimer: NodeJS.Timeout | null = null;
  const idOf = (userId: string, key: string) => `${userId} ${key}`;
  /**
   * The change committed with the key stands for the answer across a crash: it goes with
   * the next batch of claims, or alone LAZY_MS from now; this process answers it from memory meanwhile.
   */
  const keepLazily = (id: string, kept: LazyAnswer) => {
    lazy.set(id, kept);
    lazyTimer ??= setTimeout(() => void sendLazy(takeLazy()), LAZY_MS);
    lazyTimer.unref();
  };
  /** The lazily kept answers not yet on their way, taken for a statement. */
  const takeLazy = (): LazyAnswer[] => {
    if (lazyTimer) clearTimeout(lazyTimer);
    lazyTimer = null;
    return [...lazy.values()].filter((kept) => !sending.has(kept));
  };
  const sending = new Set<LazyAnswer>();
  /**
   * `kept` is in the table, or (`dropped`) failed to get there on its own: memory lets it
   * go, and once the claim's lease ends, a take-over answers from the change.
   */
  const landed = (kept: readonly LazyAnswer[], dropped = false) => {
    for (const k of kept) {
      sending.delete(k);
      const id = idOf(k.userId, k.key);
      if (lazy.get(id) === k) {
        lazy.delete(id);
        ownClaims.delete(id);
      }
    }
    if (dropped && kept.length > 0) log("answers kept lazily did not reach idempotency_keys; their keys answer from their changes once the claims' leases end", { answers: kept.length });
  };
  /** One claim on its own: inserted, or the record that is there (read in a second statement). */
  const claimOne = async (record: IdempotencyRecord): Promise<IdempotencyRecord | null> => {
    for (;;) {
      const inserted = await pool.query(
        `INSERT INTO idempotency_keys (user_id, key, fingerprint, claim, lease_until, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (user_id, key) DO NOTHING`,
        claimColumns(record),
      );
      if (inserted.rowCount === 1) return null;
      const { rows } = await pool.query<KeyRow>("SELECT * FROM idempotency_keys WHERE user_id = $1 AND key = $2", [record.userId, record.key]);
      // Swept or released between the two statements: claim it again.
      if (rows.length > 0) return fromRow(rows[0]);
    }
  };
  const claims = new Batches<IdempotencyRecord, IdempotencyRecord | null>(async (records) => {
    let rows: { claim: string }[];
    // The answers kept lazily meanwhile ride in the same statement (a CTE), not one of their own.
    const carried = takeLazy();
    for (const k of carried) sending.add(k);
    const batchColumns = [0, 1, 2, 3, 4, 5, 6].map((column) => records.map((record) => claimColumns(record)[column]));
    try {
      // Named: each connection parses and plans them once.
      ({ rows } =
        carried.length === 0
          ? await pool.query<{ claim: string }>({ name: "idempotency-claims", text: CLAIMS, values: batchColumns })
          : await pool.query<{ claim: string }>({ name: "idempotency-claims-answers", text: CLAIMS_AND_ANSWERS, values: [...batchColumns, answersJson(carried)] }));
      landed(carried);
    } catch (err) {
      // The carried answers go on their own (a failure there leaves them to a take-over).
      for (const k of carried) sending.delete(k);
      if (carried.length > 0) void sendLazy(carried);
      // Refused whole (nothing inserted: PostgreSQL answered with a code): each on its own.
      const code = (err as { code?: unknown } | null)?.code;
      if (typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith("08") || code.startsWith("57P")) throw err;
      return Promise.all(records.map(claimOne));
    }
    const inserted = new Set(rows.map((row) => row.claim));
    return Promise.all(records.map((record) => (inserted.has(record.claim!) ? null : claimOne(record))));
  });
  const answersThrough = (through: pg.Pool) =>
    new Batches<LazyAnswer, void>(async (kept) => {
      await through.query({ name: "idempotency-answers", text: ANSWERS, values: [answersJson(kept)] });
      return kept.map(() => undefined);
    }, (kept) => kept.answer.body.byteLength);
  /** Answers kept before they are sent (flushed), and those kept lazily (not waited for). */
  const answers = answersThrough(pool);
  const lazyAnswers = answersThrough(lazyPool);
  /** Lazily kept answers in statements of their own (no claim came to carry them). */
  const sendLazy = async (kept: LazyAnswer[]): Promise<void> => {
    for (const k of kept) sending.add(k);
    const results = await Promise.allSettled(lazyAnswers.addAll(kept));
    results.forEach((result, i) => landed([kept[i]], result.status === "rejected"));
  };
  /**
   * The claim as the table (or this process's memory) has it. Another process's running
   * claim is read again for a while: its answer may be on its way (kept lazily there).
   */
  const claim = async (record: IdempotencyRecord): Promise<IdempotencyRecord | null> => {
    const id = idOf(record.userId, record.key);
    const deadline = Date.now() + WAIT_FOR_ANSWER_MS;
    let ownerAsked = false;
    for (;;) {
      const mine = lazy.get(id);
      if (mine) {
        const { claim: _running, ...record } = ownClaims.get(id)!.record;
        return { ...record, answer: mine.answer };
      }
      const there = await claims.add(record);
      if (there === null) {
        ownClaims.set(id, { record, row: undefined });
        return null;
      }
      const answerOnItsWay = there.claim !== undefined && !there.answer && there.leaseUntil > record.createdAt;
      if (!answerOnItsWay || ownClaims.get(id)?.record.claim === there.claim) return there;
      // Asked once: a process that is gone has no answer on its way, and its claim is dead now.
      if (liveness && !ownerAsked) {
        ownerAsked = true;
        if (await liveness.isGone(pool, there.claim!)) return { ...there, leaseUntil: LEASE_ENDED };
      }
      if (Date.now() >= deadline) return there;
      await new Promise((resolve) => setTimeout(resolve, REREAD_MS));
    }
  };
  return {
    claimsAtCommit: true,
    ...(liveness && { claimToken: () => liveness.claimToken(), holds: (claim: string) => liveness.holds(claim) }),
    known: (userId, key) => {
      const id = idOf(userId, key);
      const mine = ownClaims.get(id)?.record;
      if (!mine) return undefined;
      const kept = lazy.get(id);
      if (!kept) return mine;
      const { claim: _running, ...record } = mine;
      return { ...record, answer: kept.answer };
    },
    claimedAtCommit: (record, row) => {
      ownClaims.set(idOf(record.userId, record.key), { record, row });
    },
    claim,
    takeOver: async (record, previousClaim) => {
      const replaced = await pool.query(
        `UPDATE idempotency_keys SET fingerprint = $3, claim = $4, lease_until = $5, created_at = $6, expires_at = $7,
           status = NULL, headers = NULL, body = NULL
         WHERE user_id = $1 AND key = $2 AND claim = $8`,
        [...claimColumns(record), previousClaim],
      );
      if (replaced.rowCount === 1) ownClaims.set(idOf(record.userId, record.key), { record, row: undefined });
      return replaced.rowCount === 1;
    },
    renew: async (userId, key, claim, leaseUntil) => {
      const renewed = await pool.query("UPDATE idempotency_keys SET lease_until = $4 WHERE user_id = $1 AND key = $2 AND claim = $3", [userId, key, claim, leaseUntil]);
      return renewed.rowCount === 1;
    },
    complete: async (userId, key, claim, answer, options) => {
      const id = idOf(userId, key);
      const mine = ownClaims.get(id);
      if (!options?.lazily || mine?.record.claim !== claim) {
        ownClaims.delete(id);
        return answers.add({ userId, key, claim, answer });
      }
      keepLazily(id, { userId, key, claim, answer, row: mine.row });
    },
    completeLazilyNow: (userId, key, claim, answer) => {
      const id = idOf(userId, key);
      // Not this process's claim (any more): the table decides, through `complete`.
      const mine = ownClaims.get(id);
      if (mine?.record.claim !== claim) return false;
      keepLazily(id, { userId, key, claim, answer, row: mine.row });
      return true;
    },
    flush: async () => {
      await sendLazy(takeLazy());
    },
    release: async (userId, key, claim) => {
      if (ownClaims.get(idOf(userId, key))?.record.claim === claim) ownClaims.delete(idOf(userId, key));
      await pool.query("DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND claim = $3", [userId, key, claim]);
    },
    sweep: async (now, most) => {
      // An answer kept in memory until its statement goes expires with its row: without this,
      // a key swept before its answer reached the table was still answered from memory here.
      for (const id of lazy.keys()) {
        const record = ownClaims.get(id)?.record;
        if (record && record.expiresAt < now) {
          lazy.delete(id);
          ownClaims.delete(id);
        }
      }
      const expired = await pool.query("DELETE FROM idempotency_keys WHERE expires_at < $1", [now]);
      // Keyed deletions (postgres-store.ts removeWithCards) live as long as their keys.
      await pool.query("DELETE FROM tree_removals WHERE expires_at < $1", [now]);
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
