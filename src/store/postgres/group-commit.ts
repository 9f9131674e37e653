/**
 * Group commit for the PostgreSQL store (issue 27): the changes that several writers hand to
 * `changes.commit` while another commit is on its way to the database go together, as one
 * statement (one transaction, one round trip, one WAL flush), and each writer is answered
 * only once that statement has committed. One batch is in flight at a time; whoever arrives
 * meanwhile waits for the next, as the embedded store's change log flushes (nedb-store.ts).
 * A lone write goes at once, so nobody waits for company; it too is one statement, where a
 * transaction of its own took six round trips (BEGIN, three writes, the notice, COMMIT).
 *
 * - **All or nothing, per writer.** The batch is one statement: it commits whole or not at
 *   all. When PostgreSQL refuses it (a revision another process took, a client-chosen card
 *   id another tree holds, a deadlock, anything with a SQLSTATE while the connection stays
 *   up) nothing of it was written, and each change is then committed again on its own
 *   (`commitOne`, a transaction per change), so that each writer gets its own answer: the
 *   one whose revision was taken gets RevisionTakenError, the others commit. A batch whose
 *   connection died mid-way may or may not have committed: every writer in it gets that
 *   error, as a lone write always did (a write is never tried again blindly).
 * - **One change per tree in a batch, or one tree's run.** A busy tree's writes may be handed
 *   over ahead of their commit (kept-reads.ts, "ahead"), each built on the one before, so a
 *   tree can have several changes waiting. When the next batch would hold only one change and
 *   the changes of its tree that wait behind it continue it (each the next revision, plain or
 *   carrying its key's claim), they go together as RUN_SQL (RUN_KEYED_SQL with claims): one
 *   statement, one WAL flush for the whole run. Otherwise a batch takes one change per tree,
 *   and the others wait for the next.
 * - **A chain breaks whole.** Changes handed over ahead carry the `Chain` of the tree's state
 *   they were built on. When one of them is not written, the chain is broken: every later
 *   change built on it is refused before it is sent (KeptReadChangedError), since a revision
 *   guard alone might pass it on top of another process's change of the same number.
 * - **The revision rule** is the lone commit's: the tree row moves only from the revision
 *   the change follows, the change log's key (tree, revision) refuses a taken revision, and
 *   a card never moves to another tree. Rows are written in tree-id order, so two processes'
 *   batches lock rows in the same order and do not deadlock each other.
 * - **Notices** (postgres/notices.ts) go in the same statement, so PostgreSQL delivers them
 *   when, and only when, the batch commits. So does each change's idempotency key (its
 *   `idem` columns): a keyed change and the record of which request made it are one write.
 *   A change carrying its key's claim is marked `idem_claimed`, and the claim's row says
 *   where the change is (`change_tree`, `change_revision`; migration 8): a take-over finds
 *   it from there, so such a change needs no entry in the `changes_idem` index. A later
 *   change of the request (`ChangeKey.held`) goes only while the claim's row still holds the
 *   request's claim, locked `FOR SHARE` in the same statement (HELD_SQL, BATCH_HELD_SQL).
 * - **Guards on users.** A change built on user records this process kept (kept-reads.ts)
 *   carries them: it goes only if each user's row still holds exactly that record, else it
 *   writes nothing and its writer gets KeptReadChangedError (the attempt runs again from
 *   fresh reads); the others of the batch commit.
 * - Big changes (imports) go alone: a batch closes at `MOST_CHANGES` changes or once it holds
 *   `MOST_CARDS` cards.
 * - **A batch of one change** (a busy tree's every write, a lone writer's) goes as LONE_SQL,
 *   a smaller statement with the same rules, which costs the database about half as much;
 *   a plain one that is not its tree's first, as NEXT_PLAIN_SQL, LONE_SQL without the claim
 *   and the tree's creation.
 */
import type pg from "pg";
import type { ChangeKey } from "../../domain/ports/store.js";
import { idempotencyId } from "../idempotency-records.js";
import type { Change } from "../../shared/changes.js";
import type { StoredCard, Tree } from "../../shared/records.js";
import { ConflictError, KeyClaimedAtCommitError, KeyClaimLostError, RevisionTakenError } from "../../shared/errors.js";
import { claimColumns } from "./idempotency.js";
import { KeptReadChangedError, type UserGuard } from "./kept-reads.js";
import { CHANGES_CHANNEL, encodeTreeNotice } from "./notices.js";

/** Changes one batch holds at most. */
const MOST_CHANGES = 64;
/** Cards (written) after which a batch takes no more changes; a bigger change goes alone. */
const MOST_CARDS = 2_000;

/**
 * The state of a tree that changes handed over ahead of their commit were built on, one after
 * the other (kept-reads.ts): broken once one of them is not written, or its outcome unknown.
 */
export interface Chain {
  broken: boolean;
}

interface Pending {
  change: Change;
  tree: Tree;
  key: ChangeKey | undefined;
  /** User rows that must still hold these records (kept-reads.ts), or the change is refused. */
  guards: readonly UserGuard[] | undefined;
  /** The chain the change was built on, when it read a tree kept with changes not yet written. */
  chain: Chain | undefined;
  /** With the row its key's claim was inserted as (`ctid`), when the change carried one. */
  resolve: (claimRow: string | undefined) => void;
  reject: (err: unknown) => void;
}

export interface GroupCommitOptions {
  pool: pg.Pool;
  /** This process's name in the notices (postgres-store.ts). */
  origin: string;
  /** One change in a transaction of its own, with its own precise failure; resolves to its claim's row, as `commit`. */
  commitOne: (change: Change, tree: Tree, key: ChangeKey | undefined, guards: readonly UserGuard[] | undefined) => Promise<string | undefined>;
  /** A card's record as stored (without its trash mark). */
  cardRecord: (card: StoredCard) => string;
  /** Told of each batch committed together (tests, bench): how many changes it held. */
  onBatch?: (size: number) => void;
}

/** What a batch statement reports when it refuses itself: its counts, for the log. */
const REFUSED = "cardtree-batch-refused";

/**
 * One statement writing a batch: the changes, the trees moved from the revision before (a
 * tree's row is written anew only by its first change: a later change whose tree another
 * process deleted meanwhile finds no row and is refused, rather than bringing the tree back;
 * a row at revision 0 is a tree stored before it had changes), the
 * cards, and a notice per change. Its last part fails the whole statement (a cast that cannot
 * succeed, evaluated only when the counts differ) when a tree did not move or a card was not
 * written, since `INSERT ... ON CONFLICT ... WHERE` skips such rows silently.
 */
function batchStatement(held: boolean): string {
  return `
WITH batch AS (
  SELECT * FROM unnest($1::text[], $2::integer[], $3::text[], $4::json[], $5::text[], $6::integer[], $7::json[], $20::text[], $21::integer[],
      $17::text[], $22::text[], $23::text[], $24::text[], $25::text[], $26::text[], $27::text[]${held ? ", $31::text[], $32::text[], $33::text[]" : ""})
    WITH ORDINALITY AS b(tree_id, revision, at, record, public_url, tree_revision, tree_record, idem, idem_step,
      claim_user, claim_key, fingerprint, claim, lease_until, created_at, expires_at${held ? ", held_user, held_key, held_claim" : ""}, n)
),${
    held
      ? `
held AS (
  SELECT b.n FROM batch AS b CROSS JOIN LATERAL (
    SELECT 1 FROM idempotency_keys AS k WHERE k.user_id = b.held_user AND k.key = b.held_key AND k.claim = b.held_claim FOR SHARE
  ) AS h
  WHERE b.held_claim IS NOT NULL
),`
      : ""
  }
checked AS (
  SELECT b.* FROM batch AS b
  WHERE NOT EXISTS (
    SELECT 1 FROM unnest($28::integer[], $29::text[], $30::text[]) AS g(n, user_id, record)
    WHERE g.n = b.n AND NOT EXISTS (SELECT 1 FROM users AS u WHERE u.id = g.user_id AND u.record::text = g.record)
  )${held ? " AND (b.held_claim IS NULL OR b.n IN (SELECT n FROM held))" : ""}
),
claimed AS (
  INSERT INTO idempotency_keys (user_id, key, fingerprint, claim, lease_until, created_at, expires_at, change_tree, change_revision)
  SELECT claim_user, claim_key, fingerprint, claim, lease_until, created_at, expires_at, tree_id, revision
  FROM checked WHERE claim_user IS NOT NULL ORDER BY claim_user, claim_key
  ON CONFLICT (user_id, key) DO NOTHING
  RETURNING user_id, key, ctid
),
go AS (
  SELECT b.* FROM checked AS b
  WHERE b.claim_user IS NULL OR EXISTS (SELECT 1 FROM claimed AS c WHERE c.user_id = b.claim_user AND c.key = b.claim_key)
),
ids AS (
  SELECT n, array_agg(id ORDER BY k) AS card_ids FROM unnest($8::integer[], $9::text[]) WITH ORDINALITY AS c(n, id, k) GROUP BY n
),
members AS (
  SELECT n, array_agg(u ORDER BY k) AS users FROM unnest($10::integer[], $11::text[]) WITH ORDINALITY AS m(n, u, k) GROUP BY n
),
logged AS (
  INSERT INTO changes (tree_id, revision, at, card_ids, record, idem, idem_step, idem_claimed)
  SELECT b.tree_id, b.revision, b.at, coalesce(ids.card_ids, '{}'::text[]), b.record, b.idem, b.idem_step,
    CASE WHEN b.claim_user IS NOT NULL THEN true END
  FROM go AS b LEFT JOIN ids ON ids.n = b.n ORDER BY b.n
  RETURNING 1
),
created AS (
  INSERT INTO trees (id, users, public_url, revision, record)
  SELECT b.tree_id, coalesce(members.users, '{}'::text[]), b.public_url, b.tree_revision, b.tree_record
  FROM go AS b LEFT JOIN members ON members.n = b.n WHERE b.tree_revision = 1 ORDER BY b.n
  ON CONFLICT (id) DO UPDATE
    SET users = excluded.users, public_url = excluded.public_url, revision = excluded.revision, record = excluded.record
    WHERE trees.revision = 0
  RETURNING 1
),
advanced AS (
  UPDATE trees
    SET users = coalesce(members.users, '{}'::text[]), public_url = b.public_url, revision = b.tree_revision, record = b.tree_record
  FROM go AS b LEFT JOIN members ON members.n = b.n
  WHERE trees.id = b.tree_id AND b.tree_revision > 1 AND trees.revision = b.tree_revision - 1
  RETURNING 1
),
moved AS (SELECT 1 FROM created UNION ALL SELECT 1 FROM advanced),
cards_going AS (
  SELECT c.id, c.tree_id, c.trashed, c.record FROM unnest($12::text[], $13::text[], $14::text[], $15::json[], $16::integer[]) AS c(id, tree_id, trashed, record, n)
  WHERE c.n IN (SELECT n FROM go)
),
written AS (
  INSERT INTO cards (id, tree_id, trashed, record)
  SELECT * FROM cards_going
  ON CONFLICT (id) DO UPDATE SET tree_id = excluded.tree_id, trashed = excluded.trashed, record = excluded.record
    WHERE cards.tree_id = excluded.tree_id
  RETURNING 1
),
counted AS (
  SELECT (SELECT count(*) FROM logged) AS logged, (SELECT count(*) FROM moved) AS moved, (SELECT count(*) FROM written) AS written,
    (SELECT count(*) FROM go) AS going, (SELECT count(*) FROM cards_going) AS cards
)
SELECT CASE WHEN moved = going AND written = cards THEN moved
         ELSE ('${REFUSED} ' || moved || ' ' || written)::integer END AS moved,
       (SELECT count(pg_notify($18, t.notice)) FROM unnest($19::text[]) WITH ORDINALITY AS t(notice, n) WHERE t.n IN (SELECT n FROM go)) AS told,
       ARRAY(SELECT tree_id FROM checked WHERE n NOT IN (SELECT n FROM go)) AS unclaimed,
       ARRAY(SELECT b.tree_id || ' ' || c.ctid FROM claimed AS c JOIN checked AS b ON b.claim_user = c.user_id AND b.claim_key = c.key) AS claim_rows,
       ARRAY(SELECT tree_id FROM batch WHERE n NOT IN (SELECT n FROM checked)) AS stale${
         held ? ",\n       ARRAY(SELECT tree_id FROM batch WHERE held_claim IS NOT NULL AND n NOT IN (SELECT n FROM held)) AS lost" : ""
       }
FROM counted`;
}

const BATCH_SQL = batchStatement(false);
/** BATCH_SQL for a batch with a change of a request that holds its key's claim already ($31–$33: its user, key and claim). */
const BATCH_HELD_SQL = batchStatement(true);

/**
 * The parts LONE_SQL and NEXT_PLAIN_SQL share, with the same parameters: the user guards
 * ($12, $13: `checked` has a row only when every kept user record is still the user's row),
 * and the change's cards, written only when `checked` has a row and each only in its own tree.
 */
const loneGuards = (also = "") => `checked AS (
  SELECT 1 AS ok WHERE ${also}NOT EXISTS (
    SELECT 1 FROM unnest($12::text[], $13::text[]) AS g(user_id, record)
    WHERE NOT EXISTS (SELECT 1 FROM users AS u WHERE u.id = g.user_id AND u.record::text = g.record)
  )
),`;

const LONE_CARDS_WRITTEN = `written AS (
  INSERT INTO cards (id, tree_id, trashed, record)
  SELECT c.id, c.tree_id, c.trashed, c.record
  FROM unnest($10::text[], $11::text[], $14::text[], $15::json[]) AS c(id, tree_id, trashed, record)
  WHERE EXISTS (SELECT 1 FROM checked)
  ON CONFLICT (id) DO UPDATE SET tree_id = excluded.tree_id, trashed = excluded.trashed, record = excluded.record
    WHERE cards.tree_id = excluded.tree_id
  RETURNING 1
),`;

/**
 * A batch of one change, the commonest (every write to one busy tree, and every lone
 * writer): the same rules as BATCH_SQL, in a statement without what only a batch needs (the
 * rows' numbering, the per-change aggregates and joins). The database spent about half the
 * CPU on it that it spends on BATCH_SQL for the same change (docs/performance.md, "helper
 * pgwrite"): its plan has a few scans where BATCH_SQL's has a dozen unnests and joins, each
 * set up and torn down on every execution.
 * `fresh` is false when a user guard failed: then nothing was written (every write reads
 * `checked`, which is empty) and no notice goes. When the change goes, a tree that did not
 * move or a card not written fails the statement as in BATCH_SQL.
 * The key's claim ($18–$24, all null without one) is a plain `INSERT`, not BATCH_SQL's
 * `ON CONFLICT DO NOTHING`: a claim that meets the user's record of the key fails the
 * statement (a unique violation, nothing written), and the change goes again on its own
 * (`commitOne`), whose claim then meets the record and refuses it with
 * KeyClaimedAtCommitError. That costs a replay two more round trips and an error line in
 * PostgreSQL's log; a conflict check costs every keyed write a second descent of the
 * primary key and a second visit of the row's page (PostgreSQL's speculative insertion:
 * 11 buffer accesses against 7 for the plain insert, measured with EXPLAIN (BUFFERS)). A
 * batch keeps the conflict check: there a conflict would send every change of the batch
 * one by one.
 * With `creates` off, the statement has no part that creates the tree's row (a change that
 * is not its tree's first); the rest is the same text.
 */
function loneStatement(creates: boolean, held = false): string {
  // A change of a request holding its claim already: $18, $19 its key and step, $20–$22 the claim's user, key and token.
  const [idem, step, claimed] = held ? ["$18", "$19", "NULL::boolean"] : ["$25", "$26", "CASE WHEN $18::text IS NOT NULL THEN true END"];
  return `
WITH ${
    held
      ? `held AS (
  SELECT 1 FROM idempotency_keys WHERE user_id = $20::text AND key = $21::text AND claim = $22::text FOR SHARE
),
${loneGuards("EXISTS (SELECT 1 FROM held) AND ")}`
      : `${loneGuards()}
claimed AS (
  INSERT INTO idempotency_keys (user_id, key, fingerprint, claim, lease_until, created_at, expires_at, change_tree, change_revision)
  SELECT $18::text, $19::text, $20::text, $21::text, $22::text, $23::text, $24::text, $1, $2::integer FROM checked WHERE $18::text IS NOT NULL
  RETURNING ctid
),`
  }
logged AS (
  INSERT INTO changes (tree_id, revision, at, card_ids, record, idem, idem_step, idem_claimed)
  SELECT $1, $2::integer, $3, $4::text[], $5::json, ${idem}::text, ${step}::integer, ${claimed} FROM checked
  RETURNING 1
),${
    creates
      ? `
created AS (
  INSERT INTO trees (id, users, public_url, revision, record)
  SELECT $1, $6::text[], $7, $8::integer, $9::json FROM checked WHERE $8::integer = 1
  ON CONFLICT (id) DO UPDATE
    SET users = excluded.users, public_url = excluded.public_url, revision = excluded.revision, record = excluded.record
    WHERE trees.revision = 0
  RETURNING 1
),`
      : ""
  }
advanced AS (
  UPDATE trees SET users = $6::text[], public_url = $7, revision = $8::integer, record = $9::json
  WHERE trees.id = $1 AND $8::integer > 1 AND trees.revision = $8::integer - 1 AND EXISTS (SELECT 1 FROM checked)
  RETURNING 1
),
${LONE_CARDS_WRITTEN}
counted AS (
  SELECT (SELECT count(*) FROM checked) AS fresh, (SELECT count(*) FROM logged) AS logged,
    ${creates ? "(SELECT count(*) FROM created) + " : ""}(SELECT count(*) FROM advanced) AS moved, (SELECT count(*) FROM written) AS written
)
SELECT CASE WHEN fresh = 0 OR (moved = 1 AND logged = 1 AND written = cardinality($10::text[])) THEN fresh = 1
         ELSE ('${REFUSED} ' || moved || ' ' || written)::boolean END AS fresh,
       ${held ? "(SELECT count(*) FROM held) = 1 AS held" : "(SELECT ctid::text FROM claimed) AS claim_row"},
       (SELECT count(pg_notify($16, $17)) FROM checked) AS told
FROM counted`;
}

const LONE_SQL = loneStatement(true);

/**
 * LONE_SQL for a busy tree's next keyed write (or any lone change with a key that is not its
 * tree's first): the claim and the key go with it as in LONE_SQL, but there is no tree row to
 * create, so the plan has one table fewer to open for writing on every execution (the same cut
 * NEXT_PLAIN_SQL makes for plain writes; issue 26's cost of a key). Same parameters as LONE_SQL.
 */
const NEXT_KEYED_SQL = loneStatement(false);

/**
 * LONE_SQL and NEXT_KEYED_SQL for a later change of a keyed request, one that holds its key's
 * claim already (issue 26: a GraphQL document of several mutations, any request of more than
 * one step). It inserts no claim; it locks the claim's row `FOR SHARE` while it still holds
 * this request's claim, and writes nothing without it (`held` false). A take-over's update of
 * the claim waits for the lock until this change has committed, and then finds the change; a
 * take-over committed first has changed the claim, so this change finds no row and is
 * refused (KeyClaimLostError). So a process paused past its lease (or cut off) cannot commit
 * a step that another process took over and ran again. A request's first change (which
 * carries its claim) and a plain change never pay for it: they go as the statements above.
 */
const HELD_SQL = loneStatement(true, true);
const NEXT_HELD_SQL = loneStatement(false, true);

/**
 * LONE_SQL for the commonest lone change of all, a busy tree's next plain write: no key
 * (so no claim) and not the tree's first change (so no row to create). Without those two
 * parts the plan has two tables fewer to open and set up for writing on every execution
 * (docs/performance.md, helper "pgcpu"). The rules are LONE_SQL's: the user guards first,
 * and when they hold, the tree moves only from the revision before, each card only in its
 * own tree, else the statement fails by the same cast; the notice goes only with the write.
 * Its parameters are LONE_SQL's first seventeen.
 */
const NEXT_PLAIN_SQL = `
WITH ${loneGuards()}
logged AS (
  INSERT INTO changes (tree_id, revision, at, card_ids, record)
  SELECT $1, $2::integer, $3, $4::text[], $5::json FROM checked
  RETURNING 1
),
advanced AS (
  UPDATE trees SET users = $6::text[], public_url = $7, revision = $8::integer, record = $9::json
  WHERE trees.id = $1 AND trees.revision = $8::integer - 1 AND EXISTS (SELECT 1 FROM checked)
  RETURNING 1
),
${LONE_CARDS_WRITTEN}
counted AS (
  SELECT (SELECT count(*) FROM checked) AS fresh, (SELECT count(*) FROM logged) AS logged,
    (SELECT count(*) FROM advanced) AS moved, (SELECT count(*) FROM written) AS written
)
SELECT CASE WHEN fresh = 0 OR (moved = 1 AND logged = 1 AND written = cardinality($10::text[])) THEN fresh = 1
         ELSE ('${REFUSED} ' || moved || ' ' || written)::boolean END AS fresh,
       (SELECT count(pg_notify($16, $17)) FROM checked) AS told
FROM counted`;

/**
 * A run of one tree's changes, each the next revision of the one before, none its tree's
 * first (changes handed over ahead of their commit; kept-reads.ts): NEXT_PLAIN_SQL for several
 * changes. Every change is logged, the tree's row moves once, from the revision before the
 * first to the last, with the last one's record, and each card is written once, as the last
 * change of the run left it (PostgreSQL cannot update one row twice in a statement). The rules
 * are NEXT_PLAIN_SQL's: the user guards of every change first, and when they hold, the tree
 * moves only from the revision before the run, each card only in its own tree, else the
 * statement fails by the same cast; a notice per change, only with the write. The run goes
 * whole or not at all.
 * Parameters: NEXT_PLAIN_SQL's, but $2, $3, $5 and $17 hold one value per change (revision,
 * time, record, notice), $6–$9 are the tree as the last change left it, $10, $11, $14 and $15
 * the cards once each, and $18 with $4 each change's card ids and the change's place (from 1).
 *
 * `keyed` (RUN_KEYED_SQL): changes of the run carry their request's key and its claim (a
 * request's first change; a later one, holding its claim already, never joins a run). Each
 * claim is inserted with its change, as NEXT_KEYED_SQL inserts one: a plain `INSERT`, so a
 * claim that meets its key's record (a replay that reached its commit, a duplicate from
 * another process) fails the whole statement with nothing written, and the run is committed
 * again one change at a time, in order (GroupCommit.run), where that change alone is refused
 * (KeyClaimedAtCommitError) and the changes built on it with it (a broken chain). The claims
 * go in key order, as BATCH_SQL's, so two processes' statements claiming the same keys wait
 * for each other in one order. Parameters $19–$25: each claim's columns (`claimColumns`), $26
 * the revision of its change; $27, $28: each change's key (`idem`, null for a plain one) and
 * step. A keyed change is marked `idem_claimed` (every keyed change of a run carries its
 * claim), and the statement answers each claim's row (`claim_rows`, "<revision> <ctid>").
 */
function runStatement(keyed: boolean): string {
  return `
WITH ${loneGuards()}
ids AS (
  SELECT n, array_agg(id ORDER BY k) AS card_ids FROM unnest($4::integer[], $18::text[]) WITH ORDINALITY AS c(n, id, k) GROUP BY n
),${
    keyed
      ? `
claimed AS (
  INSERT INTO idempotency_keys (user_id, key, fingerprint, claim, lease_until, created_at, expires_at, change_tree, change_revision)
  SELECT k.user_id, k.key, k.fingerprint, k.claim, k.lease_until, k.created_at, k.expires_at, $1, k.revision
  FROM unnest($19::text[], $20::text[], $21::text[], $22::text[], $23::text[], $24::text[], $25::text[], $26::integer[])
    AS k(user_id, key, fingerprint, claim, lease_until, created_at, expires_at, revision)
  WHERE EXISTS (SELECT 1 FROM checked)
  ORDER BY k.user_id, k.key
  RETURNING change_revision, ctid
),`
      : ""
  }
logged AS (
  INSERT INTO changes (tree_id, revision, at, card_ids, record${keyed ? ", idem, idem_step, idem_claimed" : ""})
  SELECT $1, c.revision, c.at, coalesce(ids.card_ids, '{}'::text[]), c.record${keyed ? ", c.idem, c.idem_step, CASE WHEN c.idem IS NOT NULL THEN true END" : ""}
  FROM unnest($2::integer[], $3::text[], $5::json[]${keyed ? ", $27::text[], $28::integer[]" : ""}) WITH ORDINALITY AS c(revision, at, record${keyed ? ", idem, idem_step" : ""}, n) LEFT JOIN ids ON ids.n = c.n
  WHERE EXISTS (SELECT 1 FROM checked)
  RETURNING 1
),
advanced AS (
  UPDATE trees SET users = $6::text[], public_url = $7, revision = $8::integer, record = $9::json
  WHERE trees.id = $1 AND trees.revision = ($2::integer[])[1] - 1 AND EXISTS (SELECT 1 FROM checked)
  RETURNING 1
),
${LONE_CARDS_WRITTEN}
counted AS (
  SELECT (SELECT count(*) FROM checked) AS fresh, (SELECT count(*) FROM logged) AS logged,
    (SELECT count(*) FROM advanced) AS moved, (SELECT count(*) FROM written) AS written
)
SELECT CASE WHEN fresh = 0 OR (moved = 1 AND logged = cardinality($2::integer[]) AND written = cardinality($10::text[])) THEN fresh = 1
         ELSE ('${REFUSED} ' || moved || ' ' || written)::boolean END AS fresh,
       (SELECT count(pg_notify($16, t.notice)) FROM unnest($17::text[]) AS t(notice) WHERE EXISTS (SELECT 1 FROM checked)) AS told${
         keyed ? ",\n       ARRAY(SELECT change_revision || ' ' || ctid::text FROM claimed) AS claim_rows" : ""
       }
FROM counted`;
}

const RUN_SQL = runStatement(false);
/** RUN_SQL for a run with keyed changes, each carrying its key's claim. */
const RUN_KEYED_SQL = runStatement(true);

/**
 * An error after which nothing of the statement was written: PostgreSQL answered with a
 * SQLSTATE and the connection is still there (class 08, connection exceptions, and 57P,
 * the server shutting down, leave it unknown whether the statement committed).
 */
function definitelyRolledBack(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code)) return false;
  return !code.startsWith("08") && !code.startsWith("57P");
}

/**
 * A change's commit failed with nothing of it written: refused by a rule (a revision taken, a
 * card of another tree, a kept record changed, a claim), or by PostgreSQL with the connection
 * up. Anything else (a lost connection) leaves it unknown.
 */
export function notWritten(err: unknown): boolean {
  return err instanceof RevisionTakenError || err instanceof ConflictError || definitelyRolledBack(err);
}

export class GroupCommit {
  private readonly queue: Pending[] = [];
  private inFlight: Promise<void> | null = null;

  constructor(private readonly options: GroupCommitOptions) {}

  /**
   * Commits `change` (with `tree` at its revision), with whichever others are waiting. Resolves
   * to the row (`ctid`) its key's claim was inserted as, when it carried one: the answer's
   * update finds the row there without the primary key (idempotency.ts).
   */
  commit(change: Change, tree: Tree, key?: ChangeKey, guards?: readonly UserGuard[], chain?: Chain): Promise<string | undefined> {
    return new Promise<string | undefined>((resolve, reject) => {
      this.queue.push({ change, tree, key, guards, chain, resolve, reject });
      this.pump();
    });
  }

  /** Resolves once nothing is queued or in flight (before the pool closes). */
  async drained(): Promise<void> {
    while (this.inFlight) await this.inFlight;
  }

  private pump(): void {
    if (this.inFlight || this.queue.length === 0) return;
    const batch = this.take();
    this.inFlight = this.run(batch).finally(() => {
      this.inFlight = null;
      this.pump();
    });
  }

  /**
   * The next batch: waiting changes in order, one per tree, up to the batch's bounds; or, when
   * that is one change, its tree's run (`runAfter`). Changes built on a broken chain are
   * refused first, unsent.
   */
  private take(): Pending[] {
    for (const pending of this.queue.filter((p) => p.chain?.broken)) {
      this.queue.splice(this.queue.indexOf(pending), 1);
      pending.reject(new KeptReadChangedError());
    }
    const batch = this.oneEach();
    return batch.length === 1 ? [batch[0], ...this.runAfter(batch[0])] : batch;
  }

  /**
   * The changes waiting that continue `first`'s run: of its tree and chain, each the next
   * revision, plain or carrying its key's claim (`joinsRuns`), within the batch's bounds; taken
   * from the queue.
   */
  private runAfter(first: Pending): Pending[] {
    if (!first.chain || !joinsRuns(first.key) || (first.tree.revision ?? 0) <= 1) return [];
    const run: Pending[] = [];
    let cards = first.change.after.length;
    let revision = first.change.revision;
    for (let i = 0; i < this.queue.length && run.length + 1 < MOST_CHANGES && cards < MOST_CARDS; ) {
      const pending = this.queue[i];
      if (pending.change.treeId !== first.change.treeId) {
        i++;
        continue;
      }
      if (pending.chain !== first.chain || !joinsRuns(pending.key) || pending.change.revision !== revision + 1) break;
      this.queue.splice(i, 1);
      run.push(pending);
      revision++;
      cards += pending.change.after.length;
    }
    return run;
  }

  /** Waiting changes in order, one per tree, up to the batch's bounds. */
  private oneEach(): Pending[] {
    const batch: Pending[] = [];
    const trees = new Set<string>();
    let cards = 0;
    for (let i = 0; i < this.queue.length && batch.length < MOST_CHANGES; ) {
      const pending = this.queue[i];
      const size = pending.change.after.length;
      if (trees.has(pending.change.treeId) || (batch.length > 0 && cards + size > MOST_CARDS)) {
        i++;
        continue;
      }
      this.queue.splice(i, 1);
      batch.push(pending);
      trees.add(pending.change.treeId);
      cards += size;
      if (cards >= MOST_CARDS) break;
    }
    return batch;
  }

  private async run(batch: Pending[]): Promise<void> {
    let unclaimed: ReadonlySet<string>;
    let stale: ReadonlySet<string>;
    /** Changes whose request's claim, held already, was no longer its own (BATCH_HELD_SQL, HELD_SQL). */
    let lost: ReadonlySet<string>;
    /** The row each change's claim was inserted as, by tree; in a run, by revision. */
    let claimRows: ReadonlyMap<string, string>;
    let runClaimRows: ReadonlyMap<number, string> = new Map();
    const run = batch.length > 1 && batch[1].change.treeId === batch[0].change.treeId;
    try {
      if (run) {
        const { rows } = await this.options.pool.query<{ fresh: boolean; claim_rows?: string[] }>(runQuery(batch, this.options));
        stale = new Set(rows[0].fresh ? [] : [batch[0].change.treeId]);
        lost = new Set();
        unclaimed = new Set();
        // "<revision> <ctid>": a run's changes share their tree, so its claims' rows go by revision.
        runClaimRows = new Map((rows[0].claim_rows ?? []).map((each) => [Number(each.slice(0, each.indexOf(" "))), each.slice(each.indexOf(" ") + 1)]));
        claimRows = new Map();
      } else if (batch.length === 1) {
        // A batch of one goes as LONE_SQL; its flag says what the batch statement's list of stale changes would.
        // Its key's claim meeting the key's record fails the statement (below), never leaves it unclaimed.
        const { rows } = await this.options.pool.query<{ fresh: boolean; claim_row?: string | null; held?: boolean }>(loneQuery(batch[0], this.options));
        const tree = batch[0].change.treeId;
        stale = new Set(rows[0].fresh ? [] : [tree]);
        lost = new Set(rows[0].held === false ? [tree] : []);
        unclaimed = new Set();
        claimRows = new Map(rows[0].claim_row ? [[tree, rows[0].claim_row]] : []);
      } else {
        const { rows } = await this.options.pool.query<{ unclaimed: string[]; stale: string[]; claim_rows: string[]; lost?: string[] }>(
          batchQuery(batch, this.options),
        );
        unclaimed = new Set(rows[0].unclaimed);
        stale = new Set(rows[0].stale);
        lost = new Set(rows[0].lost);
        // "<tree> <ctid>": a tree id holds no space.
        claimRows = new Map(rows[0].claim_rows.map((each) => [each.slice(0, each.indexOf(" ")), each.slice(each.indexOf(" ") + 1)]));
      }
    } catch (err) {
      if (!definitelyRolledBack(err)) {
        for (const pending of batch) refuse(pending, err);
        return;
      }
      // Nothing was written: each change again on its own, for its own answer; a run's in
      // order, each on the one before, until one is not written (the rest were built on it).
      if (run) {
        for (const pending of batch) {
          if (pending.chain?.broken) refuse(pending, new KeptReadChangedError());
          else await this.options.commitOne(pending.change, pending.tree, pending.key, pending.guards).then(pending.resolve, (e: unknown) => refuse(pending, e));
        }
        return;
      }
      await Promise.all(batch.map((p) => this.options.commitOne(p.change, p.tree, p.key, p.guards).then(p.resolve, (e: unknown) => refuse(p, e))));
      return;
    }
    // A run's changes share their tree: one stale guard leaves the whole run unwritten.
    this.options.onBatch?.(run ? (stale.size > 0 ? 0 : batch.length) : batch.length - unclaimed.size - stale.size);
    // A change whose key's claim met the key's record, whose request's claim was taken over,
    // or whose guard found a user changed, wrote nothing; the others committed.
    for (const pending of batch) {
      if (lost.has(pending.change.treeId)) refuse(pending, new KeyClaimLostError());
      else if (stale.has(pending.change.treeId)) refuse(pending, new KeptReadChangedError());
      else if (unclaimed.has(pending.change.treeId)) refuse(pending, new KeyClaimedAtCommitError());
      else pending.resolve(run ? runClaimRows.get(pending.change.revision) : claimRows.get(pending.change.treeId));
    }
  }
}

/** `pending` was not written (or may not have been): so neither is anything built on it. */
function refuse(pending: Pending, err: unknown): void {
  if (pending.chain) pending.chain.broken = true;
  pending.reject(err);
}

/**
 * Whether a change with `key` may join a run (RUN_SQL, RUN_KEYED_SQL): a plain one, or a
 * request's first change, carrying its key's claim. A later change of a keyed request (`held`)
 * goes on its own, in the statements that check the claim is still the request's.
 */
function joinsRuns(key: ChangeKey | undefined): boolean {
  return key === undefined || (key.claim !== undefined && key.held === undefined);
}

/** RUN_SQL (RUN_KEYED_SQL when a change carries its key's claim) with its parameters, for `run`: changes of one tree, in order, each the next revision. */
function runQuery(run: readonly Pending[], options: GroupCommitOptions): pg.QueryConfig {
  const last = run[run.length - 1];
  const owners: number[] = [];
  const ids: string[] = [];
  run.forEach(({ change }, index) => {
    for (const id of new Set([...change.before, ...change.after].map((c) => c._id))) {
      owners.push(index + 1);
      ids.push(id);
    }
  });
  // Each card as the run's last change of it left it.
  const cards = [...new Map(run.flatMap(({ change }) => change.after.map((c): [string, StoredCard] => [c._id, c]))).values()];
  const guards = run.flatMap((p) => p.guards ?? []);
  const claimed = run.filter((p) => p.key?.claim);
  const claims = claimed.map((p) => claimColumns(p.key!.claim!));
  // Each claim's columns (claimColumns), then the revision of its change; each change's key and step.
  const keyed = claimed.length === 0
    ? []
    : [
        ...[0, 1, 2, 3, 4, 5, 6].map((column) => claims.map((columns) => columns[column])),
        claimed.map((p) => p.change.revision),
        run.map((p) => (p.key ? idempotencyId(p.key.userId, p.key.key) : null)),
        run.map((p) => p.key?.step ?? null),
      ];
  return {
    name: claimed.length === 0 ? "cardtree-run-commit" : "cardtree-run-keyed-commit",
    text: claimed.length === 0 ? RUN_SQL : RUN_KEYED_SQL,
    values: [
      last.change.treeId,
      run.map((p) => p.change.revision),
      run.map((p) => p.change.at),
      owners,
      run.map((p) => JSON.stringify(p.change)),
      last.tree.users,
      last.tree.publicUrl ?? null,
      last.tree.revision ?? 0,
      JSON.stringify(last.tree),
      cards.map((c) => c._id),
      cards.map((c) => c.treeId),
      guards.map((g) => g.userId),
      guards.map((g) => g.record),
      cards.map((c) => c.trashed ?? null),
      cards.map(options.cardRecord),
      CHANGES_CHANNEL,
      run.map((p) => encodeTreeNotice(options.origin, p.change.treeId, p.change.revision)),
      ids,
      ...keyed,
    ],
  };
}

/** The lone statement with its parameters: for a change that is not its tree's first, NEXT_PLAIN_SQL (plain) or NEXT_KEYED_SQL (keyed); else LONE_SQL. */
function loneQuery({ change, tree, key, guards }: Pending, options: GroupCommitOptions): pg.QueryConfig {
  const values = [
    change.treeId,
    change.revision,
    change.at,
    [...new Set([...change.before, ...change.after].map((c) => c._id))],
    JSON.stringify(change),
    tree.users,
    tree.publicUrl ?? null,
    tree.revision ?? 0,
    JSON.stringify(tree),
    change.after.map((c) => c._id),
    change.after.map((c) => c.treeId),
    (guards ?? []).map((g) => g.userId),
    (guards ?? []).map((g) => g.record),
    change.after.map((c) => c.trashed ?? null),
    change.after.map(options.cardRecord),
    CHANGES_CHANNEL,
    encodeTreeNotice(options.origin, change.treeId, change.revision),
  ];
  const next = (tree.revision ?? 0) > 1;
  if (!key && next) return { name: "cardtree-next-plain-commit", text: NEXT_PLAIN_SQL, values };
  if (key?.held) {
    return {
      name: next ? "cardtree-next-held-commit" : "cardtree-held-commit",
      text: next ? NEXT_HELD_SQL : HELD_SQL,
      values: [...values, idempotencyId(key.userId, key.key), key.step, key.userId, key.key, key.held],
    };
  }
  const claim = key?.claim ? claimColumns(key.claim) : [null, null, null, null, null, null, null];
  return {
    name: next ? "cardtree-next-keyed-commit" : "cardtree-lone-commit",
    text: next ? NEXT_KEYED_SQL : LONE_SQL,
    values: [...values, ...claim, key ? idempotencyId(key.userId, key.key) : null, key?.step ?? null],
  };
}

/** The batch statement with its parameters, rows in tree-id order. */
function batchQuery(batch: readonly Pending[], options: GroupCommitOptions): pg.QueryConfig {
  const sorted = [...batch].sort((a, b) => (a.change.treeId < b.change.treeId ? -1 : a.change.treeId > b.change.treeId ? 1 : 0));
  const idOwners: number[] = [];
  const ids: string[] = [];
  const userOwners: number[] = [];
  const users: string[] = [];
  const cards: StoredCard[] = [];
  const cardOwners: number[] = [];
  sorted.forEach(({ change, tree }, index) => {
    const n = index + 1;
    for (const id of new Set([...change.before, ...change.after].map((c) => c._id))) {
      idOwners.push(n);
      ids.push(id);
    }
    for (const user of tree.users) {
      userOwners.push(n);
      users.push(user);
    }
    cards.push(...change.after);
    for (let i = 0; i < change.after.length; i++) cardOwners.push(n);
  });
  const guardOwners: number[] = [];
  const guardUsers: string[] = [];
  const guardRecords: string[] = [];
  sorted.forEach(({ guards }, index) => {
    for (const guard of guards ?? []) {
      guardOwners.push(index + 1);
      guardUsers.push(guard.userId);
      guardRecords.push(guard.record);
    }
  });
  const claims = sorted.map((p) => (p.key?.claim ? claimColumns(p.key.claim) : null));
  const claimColumn = (column: number) => claims.map((c) => (c ? c[column] : null));
  const held = sorted.some((p) => p.key?.held);
  const heldColumns = held
    ? [sorted.map((p) => (p.key?.held ? p.key.userId : null)), sorted.map((p) => (p.key?.held ? p.key.key : null)), sorted.map((p) => p.key?.held ?? null)]
    : [];
  return {
    name: held ? "cardtree-group-commit-held" : "cardtree-group-commit",
    text: held ? BATCH_HELD_SQL : BATCH_SQL,
    values: [
      sorted.map((p) => p.change.treeId),
      sorted.map((p) => p.change.revision),
      sorted.map((p) => p.change.at),
      sorted.map((p) => JSON.stringify(p.change)),
      sorted.map((p) => p.tree.publicUrl ?? null),
      sorted.map((p) => p.tree.revision ?? 0),
      sorted.map((p) => JSON.stringify(p.tree)),
      idOwners,
      ids,
      userOwners,
      users,
      cards.map((c) => c._id),
      cards.map((c) => c.treeId),
      cards.map((c) => c.trashed ?? null),
      cards.map(options.cardRecord),
      cardOwners,
      claimColumn(0),
      CHANGES_CHANNEL,
      sorted.map((p) => encodeTreeNotice(options.origin, p.change.treeId, p.change.revision)),
      sorted.map((p) => (p.key ? idempotencyId(p.key.userId, p.key.key) : null)),
      sorted.map((p) => p.key?.step ?? null),
      claimColumn(1),
      claimColumn(2),
      claimColumn(3),
      claimColumn(4),
      claimColumn(5),
      claimColumn(6),
      guardOwners,
      guardUsers,
      guardRecords,
      ...heldColumns,
    ],
  };
}
