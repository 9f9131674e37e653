/**
 * The PostgreSQL schema, as numbered migrations kept in the code (not files read at run
 * time): the server is also bundled by esbuild into dist/ and into the single binary, and
 * both carry these strings as they carry any other module. A migration once released is
 * never edited; a change to the schema is a new entry at the end.
 *
 * Records are kept as the domain sees them, one `json` value each, beside the columns that
 * are queried or must be unique: the adapter reads `record` and writes both in one
 * statement, so they cannot disagree. `json`, not `jsonb`: a card's text may hold U+0000 or
 * a lone surrogate (the API accepts any string), which jsonb refuses; and no query looks
 * inside a record, so jsonb's parsed form would cost a conversion on every read and write
 * and buy nothing. A card's trash mark lives only in its `trashed` column, so trashing
 * cards writes no record.
 */
export interface Migration {
  /** 1, 2, 3, ...: applied in order, each once. */
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "records",
    sql: `
      CREATE TABLE users (
        id text PRIMARY KEY,
        email text NOT NULL UNIQUE,
        created_at text NOT NULL,
        record json NOT NULL
      );

      CREATE TABLE trees (
        id text PRIMARY KEY,
        users text[] NOT NULL,
        public_url text UNIQUE,
        record json NOT NULL
      );
      -- "the trees a user can open": trees.users @> ARRAY[user]
      CREATE INDEX trees_users ON trees USING GIN (users);

      -- No foreign key to trees: a new tree's cards are written before the tree record
      -- (the domain's order), and removeWithCards deletes both in one transaction.
      CREATE TABLE cards (
        id text PRIMARY KEY,
        tree_id text NOT NULL,
        trashed text,
        record json NOT NULL
      );
      -- A tree's cards, live or trashed, in one index scan.
      CREATE INDEX cards_tree ON cards (tree_id);

      CREATE TABLE sessions (
        id text PRIMARY KEY,
        user_id text NOT NULL,
        expires_at text NOT NULL,
        record json NOT NULL
      );
      CREATE INDEX sessions_user ON sessions (user_id);
      CREATE INDEX sessions_expires ON sessions (expires_at);

      -- Instance settings every process shares (the secret that keys sessions).
      CREATE TABLE settings (
        key text PRIMARY KEY,
        value text NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: "change log",
    sql: `
      -- The tree's revision as a column, so a commit can require the one it follows.
      ALTER TABLE trees ADD COLUMN revision integer NOT NULL DEFAULT 0;

      -- The change log (SPEC §10). The primary key is what makes two processes unable to
      -- hand out one revision twice: the second commit of (tree, revision) fails.
      CREATE TABLE changes (
        tree_id text NOT NULL,
        revision integer NOT NULL,
        at text NOT NULL,
        -- every card the change touched (before or after), for a card's versions
        card_ids text[] NOT NULL,
        record json NOT NULL,
        PRIMARY KEY (tree_id, revision)
      );
      CREATE INDEX changes_cards ON changes USING GIN (card_ids);
      CREATE INDEX changes_at ON changes (at);
    `,
  },
  {
    version: 3,
    name: "users' scripts",
    sql: `
      -- A user's own browser scripts (issue 15), listed per user oldest first.
      CREATE TABLE scripts (
        id text PRIMARY KEY,
        user_id text NOT NULL,
        created_at text NOT NULL,
        record json NOT NULL
      );
      CREATE INDEX scripts_user ON scripts (user_id, created_at, id);
    `,
  },
  {
    version: 4,
    name: "idempotency keys",
    sql: `
      -- Idempotency keys (SPEC §13): one row per user and key, claimed by the request that
      -- runs it (claim, lease_until), then holding its answer (status, headers, body).
      -- The primary key is what lets one process only claim a key.
      CREATE TABLE idempotency_keys (
        user_id text NOT NULL,
        key text NOT NULL,
        fingerprint text NOT NULL,
        claim text,
        lease_until text NOT NULL,
        created_at text NOT NULL,
        expires_at text NOT NULL,
        status integer,
        headers json,
        body bytea,
        PRIMARY KEY (user_id, key)
      );
      CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
    `,
  },
  {
    version: 5,
    name: "changes kept with their idempotency key",
    sql: `
      -- The keyed request that made a change (SPEC §13, exactly once across a crash): the
      -- user and Idempotency-Key ("<user> <key>") and which command of the request it was.
      -- Written in the change's own statement, so a retry after a crash finds what the
      -- request did. Most changes have none, so the index holds only those that do.
      ALTER TABLE changes ADD COLUMN idem text, ADD COLUMN idem_step integer;
      CREATE INDEX changes_idem ON changes (idem) WHERE idem IS NOT NULL;
    `,
  },
  {
    version: 6,
    name: "idempotency keys answered in place",
    sql: `
      -- A keyed write inserts its claim, and its answer comes ~100 ms later as an update of
      -- that row (idempotency.ts). Measured on 3,000 keyed creations: with every page filled,
      -- 60% of those updates found no room on the row's page, so each wrote a new row version
      -- elsewhere and two index entries; the database spent ~40% more CPU on a keyed write
      -- than on a plain one (issue 26). Pages filled to 30% leave room for the answer beside
      -- its claim: every update then stayed on its page (a heap-only update, no index
      -- entry), and the table came out 15% larger, not three times, as the old versions are
      -- pruned in place.
      ALTER TABLE idempotency_keys SET (fillfactor = 30);
      -- The sweep (every minute) scans the whole table anyway for the per-user bounds, so
      -- this index saved it little, and every keyed write paid an entry in it.
      DROP INDEX idempotency_keys_expires;
    `,
  },
  {
    version: 7,
    name: "trees removed with an idempotency key",
    sql: `
      -- A keyed request's deletion of a tree (SPEC §13, exactly once across a crash): the
      -- deletion writes no change and leaves no record of the tree, so this row, written in
      -- the deletion's own statement, is what a retry after a crash finds (changes.byKey).
      -- Only the tree's id and the key ("<user> <key>", the command step) are kept, until the
      -- key expires (expires_at, the idempotency sweep). A key used again after it expired
      -- replaces its old row.
      CREATE TABLE tree_removals (
        idem text NOT NULL,
        idem_step integer NOT NULL,
        tree_id text NOT NULL,
        at text NOT NULL,
        expires_at text NOT NULL,
        PRIMARY KEY (idem, idem_step)
      );
    `,
  },
  {
    version: 8,
    name: "a claim leads to the change it was inserted with",
    sql: `
      -- A keyed change that carries its key's claim (group-commit.ts) is inserted in one
      -- statement with the claim's row, which now says where the change is: a take-over after
      -- a crash follows it (postgres-store.ts, changes.byKey) instead of an index entry that
      -- every keyed write paid and only a take-over read (issue 26). Such a change is marked
      -- idem_claimed and left out of changes_idem; a keyed change without the claim (a later
      -- command of the request, or one whose key was claimed before it ran) is found there as
      -- before, and so are those written before this migration. The change keeps its idem,
      -- so a take-over checks that the change it is led to is its key's.
      ALTER TABLE idempotency_keys ADD COLUMN change_tree text, ADD COLUMN change_revision integer;
      ALTER TABLE changes ADD COLUMN idem_claimed boolean;
      DROP INDEX changes_idem;
      CREATE INDEX changes_idem ON changes (idem) WHERE idem IS NOT NULL AND idem_claimed IS NULL;
    `,
  },
];
