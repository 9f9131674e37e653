/**
 * Reads by key for the PostgreSQL store that are asked for in one turn of the event loop go
 * to the database as one statement (issue 27): a card write reads its tree, the new card's
 * parent and the writer's record at once under the tree's lock (src/domain/tree-access.ts),
 * and the requests that arrive together each read their user by email; each of those was a
 * statement of its own, with its own round trip, its own wake-up of a backend and its own
 * write to a socket, which on a busy machine cost more than the reads themselves.
 *
 * - **As fresh as alone.** A read is sent after it is asked for, never answered from an
 *   earlier one: the statement starts once the turn that asked ends (`setImmediate`), so
 *   whatever the caller wrote before asking is there. One statement sees one snapshot, so
 *   reads that go together are consistent with each other, which reads sent apart were not.
 * - **A lone read** goes as the one statement it always was (prepared under its name).
 * - **At most `MOST_READS` reads a statement**: more asked in one turn (a burst of requests)
 *   go as several statements, so no statement's parameters or answer grow without bound.
 * - **A failure** (the database unreachable) is every read's of that statement, as it would
 *   have been each one's alone; `run` is the store's read, which tries again on a
 *   connection that turns out dead.
 */
import type pg from "pg";

/** What can be read by key: a tree by id, a live card by id, a user by id or by email. */
export type ReadKind = "tree" | "liveCard" | "user" | "userByEmail";

const KINDS: readonly ReadKind[] = ["tree", "liveCard", "user", "userByEmail"];

/** Each kind alone: the statement it was before batching, prepared once per connection. */
const ALONE: Record<ReadKind, pg.QueryConfig> = {
  tree: { name: "cardtree-tree-by-id", text: "SELECT record FROM trees WHERE id = $1" },
  liveCard: { name: "cardtree-live-card-by-id", text: "SELECT record FROM cards WHERE id = $1 AND trashed IS NULL" },
  user: { name: "cardtree-user-by-id", text: "SELECT record FROM users WHERE id = $1" },
  userByEmail: { name: "cardtree-user-by-email", text: "SELECT record FROM users WHERE email = $1" },
};

/** Several reads, parameter n + 1 holding the keys of KINDS[n]; each row says which read it answers. */
const TOGETHER: pg.QueryConfig = {
  name: "cardtree-reads-together",
  text: `SELECT 0 AS kind, id AS key, record FROM trees WHERE id = ANY($1::text[])
UNION ALL SELECT 1, id, record FROM cards WHERE id = ANY($2::text[]) AND trashed IS NULL
UNION ALL SELECT 2, id, record FROM users WHERE id = ANY($3::text[])
UNION ALL SELECT 3, email, record FROM users WHERE email = ANY($4::text[])`,
};

/** Reads one statement holds at most. */
export const MOST_READS = 1_000;

interface Wanted {
  kind: ReadKind;
  key: string;
  resolve: (read: Read<unknown>) => void;
  reject: (err: unknown) => void;
}

/** A record read (or null), and which statement read it: reads with one `statement` saw one snapshot. */
export interface Read<T> {
  record: T | null;
  statement: object;
}

export class ReadBatch {
  private waiting: Wanted[] = [];
  private scheduled = false;

  /** `run` sends one statement (the store's read, with its retry on a dead connection). */
  constructor(private readonly run: <R extends pg.QueryResultRow>(config: pg.QueryConfig) => Promise<pg.QueryResult<R>>) {}

  /** The record of `kind` under `key`, or null; read in the next statement. */
  async get<T>(kind: ReadKind, key: string): Promise<T | null> {
    return (await this.read<T>(kind, key)).record;
  }

  /** As `get`, with the statement that read it. */
  read<T>(kind: ReadKind, key: string): Promise<Read<T>> {
    return new Promise<Read<T>>((resolve, reject) => {
      this.waiting.push({ kind, key, resolve: resolve as (read: Read<unknown>) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.scheduled = false;
    const waiting = this.waiting;
    this.waiting = [];
    for (let i = 0; i < waiting.length; i += MOST_READS) this.send(waiting.slice(i, i + MOST_READS));
  }

  private send(batch: Wanted[]): void {
    const statement = {};
    if (batch.length === 1) {
      const [only] = batch;
      this.run<{ record: unknown }>({ ...ALONE[only.kind], values: [only.key] }).then(
        ({ rows }) => only.resolve({ record: rows[0]?.record ?? null, statement }),
        only.reject,
      );
      return;
    }
    const keys = KINDS.map((kind) => [...new Set(batch.filter((w) => w.kind === kind).map((w) => w.key))]);
    this.run<{ kind: number; key: string; record: unknown }>({ ...TOGETHER, values: keys }).then(
      ({ rows }) => {
        const found = new Map<string, unknown>();
        for (const row of rows) found.set(`${row.kind}\0${row.key}`, row.record);
        const given = new Set<unknown>();
        for (const w of batch) {
          const record = found.get(`${KINDS.indexOf(w.kind)}\0${w.key}`) ?? null;
          // Two reads of one record get a copy each, as two statements would have given them.
          w.resolve({ record: record !== null && given.has(record) ? structuredClone(record) : record, statement });
          given.add(record);
        }
      },
      (err: unknown) => {
        for (const w of batch) w.reject(err);
      },
    );
  }
}
