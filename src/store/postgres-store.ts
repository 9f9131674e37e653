/**
 * The PostgreSQL store (SPEC §11, issue 17): the `Store` port on a database that any number
 * of processes share. One pool of connections (`pg`); the schema is brought up to date at
 * open (postgres/migrate.ts). Each port method is one statement, or one transaction where
 * it must change several tables, so every write is all or nothing and durable when it
 * resolves (PostgreSQL commits to its WAL before answering). Commits of changes that arrive
 * together share one statement and one WAL flush (postgres/group-commit.ts), each writer
 * still answered only after that commit. SQL stays inside src/store/.
 *
 * Records are stored as the domain wrote them (`record`, json) beside the columns that
 * are queried (postgres/migrations.ts); timestamps there are the records' own ISO strings,
 * which compare in time order as text, as the embedded store compares them. No statement
 * parses a record on the server side (a card's text may hold what PostgreSQL's text type
 * cannot): the columns are passed beside it, and several rows travel as parallel arrays.
 */
import { randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import type { ChangeKey, Session, Store, StoreStatus } from "../domain/ports/store.js";
import { mayCommitAhead, RunAgainError } from "../domain/durability.js";
import { idempotencyId } from "./idempotency-records.js";
import type { Change } from "../shared/changes.js";
import { ConflictError, KeyClaimedAtCommitError, KeyClaimLostError, RevisionTakenError, UnavailableError } from "../shared/errors.js";
import type { StoredCard, StoredScript, StoredUser, Tree } from "../shared/records.js";
import { claimColumns, postgresIdempotency } from "./postgres/idempotency.js";
import { ProcessLiveness } from "./postgres/liveness.js";
import { migrate, type MigrationReport } from "./postgres/migrate.js";
import { CHANGES_CHANNEL, encodePeerNotice, encodeTreeNotice, PEERS_CHANNEL } from "./postgres/notices.js";
import { GroupCommit, notWritten } from "./postgres/group-commit.js";
import { KeptReadChangedError, KeptReads, type UserGuard } from "./postgres/kept-reads.js";
import { ReadBatch } from "./postgres/read-batch.js";
import { transaction } from "./postgres/transaction.js";
import type { Settings } from "./settings.js";

export interface PostgresStoreOptions {
  /** Where connection failures of idle clients are reported (the server's logger). */
  log?: (message: string, fields: Record<string, unknown>) => void;
  /** Where what the migrations did is reported. */
  info?: (message: string, fields: Record<string, unknown>) => void;
  /** Most connections this process holds (default 10). */
  poolSize?: number;
  /** How long a request waits for a connection before failing (default 5 s). */
  connectTimeoutMs?: number;
  /**
   * This process's name in the notices its commits send (postgres/notices.ts), so that its
   * own feed skips them; random when absent (the CLI: every server hears its writes).
   */
  origin?: string;
  /** Told of each group commit of several changes (postgres/group-commit.ts): how many it held. */
  onBatch?: (size: number) => void;
}

/** The PostgreSQL store, plus what only this adapter has. */
export interface PostgresStore extends Store {
  /** What the migrations did at open. */
  readonly migrations: MigrationReport;
  /** Resolves when the database answers a query within `timeoutMs`; rejects otherwise. */
  ping(timeoutMs?: number): Promise<void>;
  /** The instance settings every process of this database shares, made on first use. */
  settings(): Promise<Settings>;
  /** The pool, for the CLI's migration and the tests' fault injection. */
  readonly pool: pg.Pool;
}

type Row<T> = { record: T };

const json = (value: unknown) => JSON.stringify(value);

/**
 * A card's record as stored: without its trash mark (the `trashed` column holds it) and
 * without the batch mark the embedded store's files may carry (a migrated card).
 */
function cardRecord(card: StoredCard): string {
  const { trashed: _trashed, batch: _batch, ...rest } = card as StoredCard & { batch?: unknown };
  return json(rest);
}

interface CardRow {
  record: StoredCard;
  trashed: string | null;
}

function cardFromRow(row: CardRow): StoredCard {
  return row.trashed === null ? row.record : { ...row.record, trashed: row.trashed };
}

/** The columns of cards rows, as parallel arrays for `unnest` (one statement for any number). */
function cardColumns(cards: readonly StoredCard[]): unknown[] {
  return [cards.map((c) => c._id), cards.map((c) => c.treeId), cards.map((c) => c.trashed ?? null), cards.map(cardRecord)];
}

/** The tree row's columns after its id: users, public_url, revision, record. */
function treeColumns(tree: Tree): unknown[] {
  return [tree.users, tree.publicUrl ?? null, tree.revision ?? 0, json(tree)];
}

/** Node's errors for a server that cannot be reached or dropped the connection. */
const UNREACHABLE = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "ETIMEDOUT", "EPIPE"]);

/**
 * An error of reaching the database rather than of the statement: a refused or dropped
 * connection, no connection within the wait, or the server shutting down or starting
 * (SQLSTATE classes 08 and 57P).
 */
function isUnreachable(err: unknown): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string" && (UNREACHABLE.has(code) || code.startsWith("08") || code.startsWith("57P"))) return true;
  return /timeout exceeded when trying to connect|Connection terminated|not queryable|Connection ended/i.test(String(message ?? ""));
}

/** A connection that was open and is now gone (ended by the server, or reset). */
function isConnectionLost(err: unknown): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (code === "ECONNRESET" || code === "EPIPE" || code === "57P01" || code === "57P02") return true;
  return /Connection terminated|not queryable|Connection ended/i.test(String(message ?? ""));
}

/**
 * The repository with every method's unreachable-database failure turned into the domain's
 * UnavailableError (503 with the SPEC §4 body), so no transport needs to know `pg`'s errors.
 */
function reportingUnavailable<T extends object>(repository: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(repository)) {
    if (typeof method !== "function") {
      wrapped[name] = method;
      continue;
    }
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await (method as (...a: unknown[]) => Promise<unknown>)(...args);
      } catch (err) {
        throw isUnreachable(err) ? new UnavailableError() : err;
      }
    };
  }
  return wrapped as T;
}

/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = "23505";

/** Thrown by `commit` when another process committed the same revision of the tree first. */
function revisionTaken(change: Change): RevisionTakenError {
  return new RevisionTakenError(
    `The tree was changed by another request at the same time (revision ${change.revision} is taken); reload it and try again.`,
  );
}

export async function openPostgresStore(databaseUrl: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const log = options.log ?? ((message, fields) => process.stderr.write(`${message} ${JSON.stringify(fields)}\n`));
  // Every connection of the pool holds this process's liveness lock while it lives, so a
  // commit in flight keeps the process alive to the others (postgres/liveness.ts).
  const liveness = new ProcessLiveness(databaseUrl, { log, connectTimeoutMs: options.connectTimeoutMs });
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: "cardtree",
    onConnect: (client) => liveness.lockOn(client),
  });
  // An idle connection that the server drops (a restart) is reported here; without a
  // listener the pool's error would end the process. The pool replaces it on next use.
  pool.on("error", (err) => log("a database connection failed; it will be replaced", { error: String(err) }));
  let report: MigrationReport;
  try {
    report = await migrate(pool);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  if (report.applied.length > 0) {
    (options.info ?? log)("database schema migrated", { applied: report.applied, version: report.version });
  }

  const origin = options.origin ?? randomUUID();
  let status: StoreStatus = "open";
  // A read is tried again on a connection that turns out dead: the server ended it (a
  // restart) and the pool handed it out before the notice arrived. Each try drops one dead
  // connection, so at most as many tries as the pool holds. A write is not tried again:
  // whether it committed before its connection died cannot be known here.
  const poolSize = options.poolSize ?? 10;
  // A read given as a named query config is prepared once per connection and then only
  // executed (postgres/read-batch.ts): the reads every card write makes skip parsing and planning.
  const read = async <R extends pg.QueryResultRow>(sql: string | pg.QueryConfig, params: unknown[] = []): Promise<pg.QueryResult<R>> => {
    // Only a write's attempt behind changes handed over ahead waits; every other read goes at once.
    const behind = kept.caughtUp();
    if (behind) await behind;
    for (let attempt = 1; ; attempt++) {
      try {
        return await pool.query<R>(typeof sql === "string" ? { text: sql, values: params } : sql);
      } catch (err) {
        if (!isConnectionLost(err) || attempt > poolSize) throw err;
      }
    }
  };
  const rows = async <T>(sql: string, params: unknown[] = []): Promise<T[]> =>
    (await read<Row<T>>(sql, params)).rows.map((r) => r.record);
  const one = async <T>(sql: string, params: unknown[] = []): Promise<T | null> => (await rows<T>(sql, params))[0] ?? null;
  // Reads by key asked for in one turn of the event loop share a statement (issue 27).
  const byKey = new ReadBatch((config) => read(config));
  // A busy tree's next write reads what this process's last commit left (postgres/kept-reads.ts).
  const kept = new KeptReads();
  const run = async (sql: string, params: unknown[] = []): Promise<void> => {
    await pool.query(sql, params);
  };

  /**
   * What a change handed over ahead answers when it is not written: RunAgainError when nothing
   * was (durability.ts), else the failure. A claim that met its key's record
   * (KeyClaimedAtCommitError: nothing written either) is not run again: what the key holds
   * answers the request (idempotency.ts, `commandStep`), as when it is refused under the lock.
   */
  const notWrittenAhead = (err: unknown): unknown => {
    if (notWritten(err)) return new RunAgainError(err instanceof RevisionTakenError && !(err instanceof KeptReadChangedError), { cause: err });
    return isUnreachable(err) ? new UnavailableError() : err;
  };

  const commit = async (change: Change, tree: Tree, key?: ChangeKey): Promise<void> => {
    if (status === "closed") throw new UnavailableError();
    const { guards, chain } = await kept.committing(change);
    let claimRow: string | undefined;
    try {
      claimRow = await group.commit(change, tree, key, guards, chain);
    } catch (err) {
      kept.failed(change, err);
      throw err;
    }
    kept.committed(change, tree);
    if (key?.claim) idempotency.claimedAtCommit(key.claim, claimRow);
  };

  // One change in a transaction of its own: the group commit's way when its batch is
  // refused, so that each writer gets its own answer (postgres/group-commit.ts).
  const commitOne = (change: Change, tree: Tree, key: ChangeKey | undefined, guards: readonly UserGuard[] | undefined): Promise<string | undefined> =>
    transaction(pool, async (client) => {
      const cardIds = [...new Set([...change.before, ...change.after].map((c) => c._id))];
      if (guards && guards.length > 0) {
        // The user records the write took from memory must still be these (postgres/kept-reads.ts).
        const { rows: held } = await client.query<{ n: number }>(
          `SELECT count(*)::integer AS n FROM unnest($1::text[], $2::text[]) AS g(user_id, record)
           WHERE EXISTS (SELECT 1 FROM users AS u WHERE u.id = g.user_id AND u.record::text = g.record)`,
          [guards.map((g) => g.userId), guards.map((g) => g.record)],
        );
        if (held[0].n !== guards.length) throw new KeptReadChangedError();
      }
      if (key?.held) {
        // A later change of a request holding its claim goes only while the claim is still its
        // own, and a take-over waits for this transaction (postgres/group-commit.ts, HELD_SQL).
        const held = await client.query("SELECT 1 FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND claim = $3 FOR SHARE", [
          key.userId,
          key.key,
          key.held,
        ]);
        if (held.rowCount !== 1) throw new KeyClaimLostError();
      }
      let claimRow: string | undefined;
      if (key?.claim) {
        // The key's claim goes with the change (idempotency.ts, claimed at commit); a record of
        // the key there already (or being inserted by another run, waited for) refuses this change.
        const claimed = await client.query<{ row: string }>(
          `INSERT INTO idempotency_keys (user_id, key, fingerprint, claim, lease_until, created_at, expires_at, change_tree, change_revision)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (user_id, key) DO NOTHING RETURNING ctid::text AS row`,
          [...claimColumns(key.claim), change.treeId, change.revision],
        );
        if (claimed.rowCount !== 1) throw new KeyClaimedAtCommitError();
        claimRow = claimed.rows[0].row;
      }
      try {
        await client.query("INSERT INTO changes (tree_id, revision, at, card_ids, record, idem, idem_step, idem_claimed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)", [
          change.treeId,
          change.revision,
          change.at,
          cardIds,
          json(change),
          key ? idempotencyId(key.userId, key.key) : null,
          key?.step ?? null,
          key?.claim ? true : null,
        ]);
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION && (err as { constraint?: string }).constraint === "changes_pkey") {
          throw revisionTaken(change);
        }
        throw err;
      }
      // The tree moves only from the revision this change follows: a process working
      // from an older copy of the tree (whose revision was pruned from the log) fails
      // here instead of writing over newer changes. Only a tree's first change (its
      // creation, or the first change of a tree stored at revision 0) writes a new row: a later one finds no row when another process deleted
      // the tree after this one read it, and is refused (the retry then finds no tree)
      // instead of bringing the tree back with this change alone.
      const written = await client.query(
        tree.revision === 1
          ? `INSERT INTO trees (id, users, public_url, revision, record) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (id) DO UPDATE
               SET users = excluded.users, public_url = excluded.public_url, revision = excluded.revision, record = excluded.record
               WHERE trees.revision = 0`
          : `UPDATE trees SET users = $2, public_url = $3, revision = $4, record = $5 WHERE id = $1 AND revision = $4 - 1`,
        [tree._id, ...treeColumns(tree)],
      );
      if (written.rowCount === 0) throw revisionTaken(change);
      if (change.after.length > 0) {
        // A card never moves to another tree: a new card whose id another tree's card
        // holds (a client-chosen id raced in two processes, SPEC §13) writes no row, and
        // the whole change is refused.
        const cards = await client.query(
          `INSERT INTO cards (id, tree_id, trashed, record)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::json[])
           ON CONFLICT (id) DO UPDATE SET tree_id = excluded.tree_id, trashed = excluded.trashed, record = excluded.record
             WHERE cards.tree_id = excluded.tree_id`,
          cardColumns(change.after),
        );
        if (cards.rowCount !== change.after.length) {
          throw new ConflictError("A card with one of these ids exists in another tree; nothing was changed. Choose another id.");
        }
      }
      // Delivered by PostgreSQL when (and only if) this transaction commits.
      await client.query("SELECT pg_notify($1, $2)", [CHANGES_CHANNEL, encodeTreeNotice(origin, change.treeId, change.revision)]);
      return claimRow;
    });
  // The answers kept lazily: written without waiting for the WAL's flush (idempotency.ts).
  const lazyPool = new pg.Pool({
    connectionString: databaseUrl,
    max: 1,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: "cardtree-kept-answers",
    options: "-c synchronous_commit=off",
  });
  lazyPool.on("error", (err) => log("a database connection failed; it will be replaced", { error: String(err) }));
  await liveness.start();
  const idempotency = postgresIdempotency(pool, log, lazyPool, liveness);
  const group = new GroupCommit({ pool, origin, commitOne, cardRecord, onBatch: options.onBatch });

  const store: PostgresStore = {
    pool,
    migrations: report,
    status: () => status,
    ping: async (timeoutMs = 2_000) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        await Promise.race([pool.query("SELECT 1"), late]);
      } finally {
        clearTimeout(timer);
      }
    },
    settings: async () => {
      // Two processes starting together: the first insert wins, both read the same values.
      await run(
        `INSERT INTO settings (key, value) VALUES ('secret', $1), ('createdAt', $2) ON CONFLICT (key) DO NOTHING`,
        [randomBytes(32).toString("hex"), new Date().toISOString()],
      );
      const { rows: found } = await pool.query<{ key: string; value: string }>(
        "SELECT key, value FROM settings WHERE key IN ('secret', 'createdAt')",
      );
      const values = Object.fromEntries(found.map((r) => [r.key, r.value]));
      return { secret: values.secret, createdAt: values.createdAt };
    },
    users: {
      insert: (user) =>
        run("INSERT INTO users (id, email, created_at, record) VALUES ($1, $2, $3, $4)", [
          user._id,
          user.email,
          user.createdAt,
          json(user),
        ]),
      byId: async (id) => {
        const known = kept.user(id);
        if (known) return known;
        const { record } = await byKey.read<StoredUser>("user", id);
        kept.userRead(record);
        return record;
      },
      byIds: (ids) =>
        ids.length === 0 ? Promise.resolve([]) : rows<StoredUser>("SELECT record FROM users WHERE id = ANY($1::text[])", [[...ids]]),
      byEmail: (email) => byKey.get<StoredUser>("userByEmail", email),
      list: () => rows<StoredUser>("SELECT record FROM users ORDER BY created_at, id"),
      // Read, merge, write under the row's lock: the merge is done here, not in SQL, which
      // would have to parse the record.
      update: async (id, fields) => {
        await kept.writing();
        kept.forgetUser(id);
        return transaction(pool, async (client) => {
          const { rows: found } = await client.query<Row<StoredUser>>("SELECT record FROM users WHERE id = $1 FOR UPDATE", [id]);
          if (found.length === 0) return null;
          const user: StoredUser = { ...found[0].record, ...fields };
          await client.query("UPDATE users SET email = $2, created_at = $3, record = $4 WHERE id = $1", [
            id,
            user.email,
            user.createdAt,
            json(user),
          ]);
          return user;
        });
      },
    },
    trees: {
      byId: async (id) => {
        const known = kept.tree(id);
        if (known) return known;
        const behind = kept.caughtUp();
        if (behind) await behind;
        const { record, statement } = await byKey.read<Tree>("tree", id);
        kept.treeRead(record, statement);
        return record;
      },
      byPublicUrl: (publicUrl) => one<Tree>("SELECT record FROM trees WHERE public_url = $1", [publicUrl]),
      forUser: (userId) => rows<Tree>("SELECT record FROM trees WHERE users @> ARRAY[$1::text]", [userId]),
      // One statement: the tree, its cards and its changes go together or not at all, with
      // a keyed deletion's row in tree_removals, and the other processes hear of it when it
      // commits (x: removed, r: its last revision).
      removeWithCards: async (id, keyed) => {
        await kept.writing();
        kept.forgetTree(id);
        // A keyed deletion's row ($4-$7: its key, step, time and expiry), from `rows`.
        const removalKept = (rows: string) => `removal_kept AS (INSERT INTO tree_removals (idem, idem_step, tree_id, at, expires_at) ${rows}
               ON CONFLICT (idem, idem_step) DO UPDATE SET tree_id = excluded.tree_id, at = excluded.at, expires_at = excluded.expires_at)`;
        const params = [id, CHANGES_CHANNEL, origin];
        if (keyed) params.push(idempotencyId(keyed.key.userId, keyed.key.key), String(keyed.key.step), keyed.at, keyed.expiresAt);
        if (!keyed?.key.held) {
          return run(
            `WITH cards_gone AS (DELETE FROM cards WHERE tree_id = $1), changes_gone AS (DELETE FROM changes WHERE tree_id = $1),
               tree_gone AS (DELETE FROM trees WHERE id = $1 RETURNING revision)${keyed ? `, ${removalKept("VALUES ($4, $5, $1, $6, $7)")}` : ""}
             SELECT pg_notify($2, json_build_object('o', $3::text, 't', $1::text, 'r', revision, 'x', true)::text) FROM tree_gone`,
            params,
          );
        }
        // Under a claim the request holds: removed only while the claim is still its own, as a
        // later change of a keyed request (postgres/group-commit.ts, HELD_SQL); a take-over waits.
        params.push(keyed.key.userId, keyed.key.key, keyed.key.held);
        const { rows: [{ held }] } = await pool.query<{ held: boolean }>(
          `WITH held AS (SELECT 1 FROM idempotency_keys WHERE user_id = $8 AND key = $9 AND claim = $10 FOR SHARE),
             cards_gone AS (DELETE FROM cards WHERE tree_id = $1 AND EXISTS (SELECT 1 FROM held)),
             changes_gone AS (DELETE FROM changes WHERE tree_id = $1 AND EXISTS (SELECT 1 FROM held)),
             tree_gone AS (DELETE FROM trees WHERE id = $1 AND EXISTS (SELECT 1 FROM held) RETURNING revision),
             ${removalKept("SELECT $4, $5, $1, $6, $7 FROM held")}
           SELECT EXISTS (SELECT 1 FROM held) AS held,
             (SELECT count(pg_notify($2, json_build_object('o', $3::text, 't', $1::text, 'r', revision, 'x', true)::text)) FROM tree_gone) AS told`,
          params,
        );
        if (!held) throw new KeyClaimLostError();
      },
    },
    cards: {
      byId: async (id) => {
        const { rows: found } = await read<CardRow>("SELECT record, trashed FROM cards WHERE id = $1", [id]);
        return found.length === 0 ? null : cardFromRow(found[0]);
      },
      trashedByTree: async (treeId) =>
        (await read<CardRow>("SELECT record, trashed FROM cards WHERE tree_id = $1 AND trashed IS NOT NULL", [treeId])).rows.map(
          cardFromRow,
        ),
      liveById: async (id) => {
        const known = kept.liveCard(id);
        if (known) return known;
        const behind = kept.caughtUp();
        if (behind) await behind;
        const { record, statement } = await byKey.read<StoredCard>("liveCard", id);
        kept.liveCardRead(record, statement);
        return record;
      },
      liveByTree: (treeId) => rows<StoredCard>("SELECT record FROM cards WHERE tree_id = $1 AND trashed IS NULL", [treeId]),
      countLiveByTrees: async (treeIds) => {
        if (treeIds.length === 0) return 0;
        const { rows: counted } = await read<{ n: number }>(
          "SELECT count(*)::integer AS n FROM cards WHERE tree_id = ANY($1::text[]) AND trashed IS NULL",
          [[...treeIds]],
        );
        return counted[0].n;
      },
    },
    changes: {
      commit,
      // A busy tree's write goes ahead of its commit where the domain can run it again
      // (kept-reads.ts, "Ahead of the commit"), keyed or not: a keyed request's first change
      // carries its key's claim, a later one the check that the claim is still the request's
      // (group-commit.ts; such a change goes in a statement of its own, never in a run).
      // Anything else commits before it returns.
      commitEarly: async (change, tree, key) => {
        if (!mayCommitAhead() || !kept.mayGoAhead(change)) {
          await commit(change, tree, key);
          return { durable: Promise.resolve() };
        }
        if (status === "closed") throw new UnavailableError();
        const durable = kept.goingAhead(change, tree, (guards, chain) =>
          group.commit(change, tree, key, guards, chain).then(
            // The claim is in the table with its change: this process runs it (as `commit` says).
            (claimRow) => {
              if (key?.claim) idempotency.claimedAtCommit(key.claim, claimRow);
            },
            (err: unknown) => {
              throw notWrittenAhead(err);
            },
          ),
        );
        return { durable };
      },
      byKey: async (userId, key, since) => {
        // The change that carried the key's claim is where the claim's row says (migration 8),
        // if it is still that key's; any other change of the key is in changes_idem, and a
        // keyed deletion's row beside the changes (tree_id set, no record).
        const { rows: found } = await read<{ record: Change | null; idem_step: number; tree_id: string | null }>(
          `SELECT record, idem_step, revision, NULL AS tree_id FROM changes WHERE idem = $1 AND idem_claimed IS NULL AND at >= $2
           UNION ALL
           SELECT c.record, c.idem_step, c.revision, NULL FROM idempotency_keys AS k
             JOIN changes AS c ON c.tree_id = k.change_tree AND c.revision = k.change_revision
             WHERE k.user_id = $3 AND k.key = $4 AND c.idem = $1 AND c.at >= $2
           UNION ALL SELECT NULL, idem_step, NULL, tree_id FROM tree_removals WHERE idem = $1 AND at >= $2
           ORDER BY idem_step, revision`,
          [idempotencyId(userId, key), since, userId, key],
        );
        return found.map((row) => (row.tree_id === null ? { step: row.idem_step, change: row.record! } : { step: row.idem_step, removedTreeId: row.tree_id }));
      },
      since: (treeId, since, limit) =>
        rows<Change>("SELECT record FROM changes WHERE tree_id = $1 AND revision > $2 ORDER BY revision LIMIT $3", [
          treeId,
          since,
          limit,
        ]),
      history: (treeId, { before, limit }) =>
        rows<Change>(
          `SELECT record FROM changes WHERE tree_id = $1 AND ($2::integer IS NULL OR revision < $2)
           ORDER BY revision DESC LIMIT $3`,
          [treeId, before ?? null, limit],
        ),
      ofCard: (treeId, cardId, limit) =>
        rows<Change>(
          "SELECT record FROM changes WHERE tree_id = $1 AND card_ids @> ARRAY[$2::text] ORDER BY revision DESC LIMIT $3",
          [treeId, cardId, limit],
        ),
      prune: async (olderThan) => {
        const pruned = await pool.query(
          `DELETE FROM changes AS c WHERE c.at < $1
             AND c.revision < (SELECT max(revision) FROM changes AS latest WHERE latest.tree_id = c.tree_id)`,
          [olderThan],
        );
        return pruned.rowCount ?? 0;
      },
    },
    sessions: {
      insert: (session) =>
        run("INSERT INTO sessions (id, user_id, expires_at, record) VALUES ($1, $2, $3, $4)", [
          session._id,
          session.userId,
          session.expiresAt,
          json(session),
        ]),
      byId: (id) => one<Session>("SELECT record FROM sessions WHERE id = $1", [id]),
      withUser: async (id) => {
        const { rows: found } = await read<{ session: Session; user: StoredUser | null }>({
          name: "cardtree-session-with-user",
          text: "SELECT s.record AS session, u.record AS user FROM sessions AS s LEFT JOIN users AS u ON u.id = s.user_id WHERE s.id = $1",
          values: [id],
        });
        return found[0] ?? null;
      },
      // Each tells the other processes in the same statement, so their live streams on the
      // credentials end exactly when the sessions are gone (even when the CLI removed them).
      remove: (id) =>
        run("WITH gone AS (DELETE FROM sessions WHERE id = $1) SELECT pg_notify($2, $3)", [
          id,
          PEERS_CHANNEL,
          encodePeerNotice({ origin, event: "signout", which: { sessionId: id }, at: Date.now() }),
        ]),
      removeForUser: (userId, exceptId) =>
        run("WITH gone AS (DELETE FROM sessions WHERE user_id = $1 AND ($2::text IS NULL OR id <> $2)) SELECT pg_notify($3, $4)", [
          userId,
          exceptId ?? null,
          PEERS_CHANNEL,
          encodePeerNotice({ origin, event: "signout", which: exceptId === undefined ? { userId } : { userId, keepSessionId: exceptId }, at: Date.now() }),
        ]),
      removeExpired: (now) => run("DELETE FROM sessions WHERE expires_at < $1", [now]),
    },
    scripts: {
      insert: (script) =>
        run("INSERT INTO scripts (id, user_id, created_at, record) VALUES ($1, $2, $3, $4)", [
          script._id,
          script.userId,
          script.createdAt,
          json(script),
        ]),
      byId: (id) => one<StoredScript>("SELECT record FROM scripts WHERE id = $1", [id]),
      forUser: (userId) =>
        rows<StoredScript>("SELECT record FROM scripts WHERE user_id = $1 ORDER BY created_at, id", [userId]),
      replace: (script) =>
        run("UPDATE scripts SET user_id = $2, created_at = $3, record = $4 WHERE id = $1", [
          script._id,
          script.userId,
          script.createdAt,
          json(script),
        ]),
      remove: (id) => run("DELETE FROM scripts WHERE id = $1", [id]),
    },
    idempotency,
    keptReads: (treeId, attempt) => kept.run(treeId, attempt),
    heard: (notice) => kept.heard(notice.treeId, notice.revision, notice.removed === true),
    close: async () => {
      if (status === "closed") return;
      status = "closed";
      // Commits already handed over are answered before the connections go, and answers kept lazily are written.
      await group.drained();
      await idempotency.flush();
      await lazyPool.end();
      await pool.end();
      await liveness.close();
    },
  };
  return {
    ...store,
    users: reportingUnavailable(store.users),
    trees: reportingUnavailable(store.trees),
    cards: reportingUnavailable(store.cards),
    changes: reportingUnavailable(store.changes),
    sessions: reportingUnavailable(store.sessions),
    scripts: reportingUnavailable(store.scripts),
    // `known` answers from memory, at once.
    idempotency: {
      ...reportingUnavailable(store.idempotency),
      known: store.idempotency.known,
      completeLazilyNow: store.idempotency.completeLazilyNow,
      claimToken: store.idempotency.claimToken,
      holds: store.idempotency.holds,
    },
  };
}
