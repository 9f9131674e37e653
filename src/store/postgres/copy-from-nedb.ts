/**
 * `migrate --to postgres` (SPEC §11): copies an embedded data directory into a PostgreSQL
 * database, every record as it is stored (trashed cards, sessions and the change log
 * included), in one transaction, then reads it back and verifies it: a count per
 * collection and a checksum per tree (the tree record, all its cards and its changes). The data directory is opened as the server
 * opens it (which repairs an unfinished write and holds the directory's lock, so no server
 * writes to it meanwhile) and is left unchanged.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import type pg from "pg";
import type { StoredCard } from "../../shared/records.js";
import { COLLECTIONS, openNedbStore } from "../nedb-store.js";
import { docsFromDatafile } from "../nedb-recovery.js";
import { transaction } from "./transaction.js";

type Doc = Record<string, unknown>;
/** The NeDB datafiles, and the change log (changes.log, read through the store). */
const TABLE_NAMES = [...COLLECTIONS, "changes"] as const;
type Collection = (typeof TABLE_NAMES)[number];

export interface CopyReport {
  /** Records per collection, read from the data directory and found in the database. */
  counts: Record<string, { source: number; target: number }>;
  /** Trees whose checksum matched. */
  treesVerified: number;
  /** Ids of trees whose checksum did not match (none when the copy is good). */
  treesMismatched: string[];
  /** Whether the instance secret was copied (cookie sessions stay valid). */
  secretCopied: boolean;
}

/** Rows written per statement. */
const CHUNK = 5_000;

/** Each collection's table and how a record becomes its columns (as postgres-store.ts writes them). */
const TABLES: Record<Collection, { table: string; columns: string[]; types: string[]; row(doc: Doc): unknown[] }> = {
  users: {
    table: "users",
    columns: ["id", "email", "created_at", "record"],
    types: ["text", "text", "text", "json"],
    row: (d) => [d._id, d.email, d.createdAt, JSON.stringify(d)],
  },
  trees: {
    table: "trees",
    columns: ["id", "users", "public_url", "revision", "record"],
    // An array of arrays cannot travel as one parameter; the users go as json and are unpacked.
    types: ["text", "json", "text", "integer", "json"],
    row: (d) => [d._id, JSON.stringify(d.users ?? []), d.publicUrl ?? null, d.revision ?? 0, JSON.stringify(d)],
  },
  cards: {
    table: "cards",
    columns: ["id", "tree_id", "trashed", "record"],
    types: ["text", "text", "text", "json"],
    row: (d) => {
      const { trashed, ...record } = d;
      return [d._id, d.treeId, trashed ?? null, JSON.stringify(record)];
    },
  },
  sessions: {
    table: "sessions",
    columns: ["id", "user_id", "expires_at", "record"],
    types: ["text", "text", "text", "json"],
    row: (d) => [d._id, d.userId, d.expiresAt, JSON.stringify(d)],
  },
  scripts: {
    table: "scripts",
    columns: ["id", "user_id", "created_at", "record"],
    types: ["text", "text", "text", "json"],
    row: (d) => [d._id, d.userId, d.createdAt, JSON.stringify(d)],
  },
  changes: {
    table: "changes",
    columns: ["tree_id", "revision", "at", "card_ids", "record"],
    types: ["text", "integer", "text", "json", "json"],
    row: (d) => {
      const change = asChange(d);
      const ids = [...new Set([...(change.before ?? []), ...(change.after ?? [])].map((c) => (c as Doc)._id))];
      return [change.treeId, change.revision, change.at, JSON.stringify(ids), JSON.stringify(change)];
    },
  },
};

/** A change as the log holds it. */
function asChange(doc: Doc): Doc & { treeId: string; revision: number; at: string; before?: Doc[]; after?: Doc[] } {
  return doc as ReturnType<typeof asChange>;
}

/** How a json[] column of arrays becomes the text[] column it is stored as. */
const UNPACK: Partial<Record<Collection, Record<string, string>>> = {
  trees: { users: "ARRAY(SELECT json_array_elements_text(users))" },
  changes: { card_ids: "ARRAY(SELECT json_array_elements_text(card_ids))" },
};

async function insertAll(client: pg.PoolClient, name: Collection, docs: Doc[]): Promise<void> {
  const { table, columns, types, row } = TABLES[name];
  const params = types.map((t, i) => `$${i + 1}::${t}[]`).join(", ");
  const select = `SELECT ${columns.map((c) => UNPACK[name]?.[c] ?? c).join(", ")}`;
  for (let start = 0; start < docs.length; start += CHUNK) {
    const rows = docs.slice(start, start + CHUNK).map(row);
    await client.query(
      `INSERT INTO ${table} (${columns.join(", ")}) ${select} FROM unnest(${params}) AS t(${columns.join(", ")})`,
      columns.map((_, i) => rows.map((r) => r[i])),
    );
  }
}

/** JSON with object keys in sorted order: the same record gives the same text however it was stored. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value as Doc)
      .filter((k) => (value as Doc)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Doc)[k])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value);
}

/** One hash over the tree record, its cards (by id) and its changes (by revision). */
function treeChecksum(tree: Doc, cards: Doc[], changes: Doc[]): string {
  const hash = createHash("sha256").update(canonical(tree));
  for (const card of [...cards].sort((a, b) => String(a._id).localeCompare(String(b._id)))) hash.update(canonical(card));
  for (const change of [...changes].sort((a, b) => Number(a.revision) - Number(b.revision))) hash.update(canonical(change));
  return hash.digest("hex");
}

function groupByTree(docs: Doc[]): Map<string, Doc[]> {
  const groups = new Map<string, Doc[]>();
  for (const doc of docs) {
    const list = groups.get(doc.treeId as string) ?? [];
    list.push(doc);
    groups.set(doc.treeId as string, list);
  }
  return groups;
}

async function tableCounts(pool: pg.Pool): Promise<Record<Collection, number>> {
  const counts = {} as Record<Collection, number>;
  for (const name of TABLE_NAMES) {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::integer AS n FROM ${TABLES[name].table}`);
    counts[name] = rows[0].n;
  }
  return counts;
}

/**
 * Copies `dataDir` into the database behind `pool` (its schema already migrated).
 * @throws Error when the database already holds records and `force` is not set, or when
 * the directory is in use by a running server.
 */
export async function copyNedbToPostgres(dataDir: string, pool: pg.Pool, options: { force?: boolean } = {}): Promise<CopyReport> {
  const before = await tableCounts(pool);
  const held = Object.values(before).reduce((sum, n) => sum + n, 0);
  if (held > 0 && !options.force) {
    throw new Error(
      `The database already holds ${held} records (${TABLE_NAMES.map((c) => `${before[c]} ${c}`).join(", ")}); migrate copies into an empty database only. Add --force to replace what it holds.`,
    );
  }
  // Opening repairs what a crash left and takes the directory's lock until the copy is done.
  const source = await openNedbStore(dataDir, { log: () => undefined });
  try {
    const docs = {} as Record<Collection, Doc[]>;
    for (const name of COLLECTIONS) docs[name] = await docsFromDatafile(path.join(dataDir, `${name}.db`));
    // The change log is the store's own file (change-log.ts): read through the port, per tree.
    docs.changes = [];
    for (const tree of docs.trees) {
      const changes = await source.changes.since(tree._id as string, 0, Number.MAX_SAFE_INTEGER);
      docs.changes.push(...(changes as unknown as Doc[]));
    }
    const secret = await readFile(path.join(dataDir, "settings.json"), "utf8")
      .then((text) => (JSON.parse(text) as { secret?: string; createdAt?: string }) ?? {})
      .catch(() => ({}) as { secret?: string; createdAt?: string });

    await transaction(pool, async (client) => {
      if (held > 0) await client.query(`TRUNCATE ${TABLE_NAMES.map((c) => TABLES[c].table).join(", ")}`);
      // Kept idempotency answers (SPEC §13) tell of writes to what is replaced now: they go too.
      await client.query("DELETE FROM idempotency_keys");
      await client.query("DELETE FROM tree_removals");
      for (const name of TABLE_NAMES) await insertAll(client, name, docs[name]);
      if (secret.secret) {
        // The same secret keeps the copied cookie sessions valid.
        await client.query(
          `INSERT INTO settings (key, value) VALUES ('secret', $1), ('createdAt', $2)
           ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
          [secret.secret, secret.createdAt ?? new Date().toISOString()],
        );
      }
    });

    const after = await tableCounts(pool);
    const counts: CopyReport["counts"] = {};
    for (const name of TABLE_NAMES) counts[name] = { source: docs[name].length, target: after[name] };

    const cardsByTree = groupByTree(docs.cards);
    const changesByTree = groupByTree(docs.changes.map(asChange));
    const treesMismatched: string[] = [];
    for (const tree of docs.trees) {
      const id = tree._id as string;
      const stored = await pool.query<{ record: Doc }>("SELECT record FROM trees WHERE id = $1", [id]);
      const cards = await pool.query<{ record: StoredCard; trashed: string | null }>(
        "SELECT record, trashed FROM cards WHERE tree_id = $1",
        [id],
      );
      const changes = await pool.query<{ record: Doc }>("SELECT record FROM changes WHERE tree_id = $1", [id]);
      const readBack = cards.rows.map((r) => (r.trashed === null ? r.record : { ...r.record, trashed: r.trashed }));
      const same =
        stored.rows.length === 1 &&
        treeChecksum(stored.rows[0].record, readBack as unknown as Doc[], changes.rows.map((r) => r.record)) ===
          treeChecksum(tree, cardsByTree.get(id) ?? [], changesByTree.get(id) ?? []);
      if (!same) treesMismatched.push(id);
    }
    return {
      counts,
      treesVerified: docs.trees.length - treesMismatched.length,
      treesMismatched,
      secretCopied: Boolean(secret.secret),
    };
  } finally {
    await source.close();
  }
}
