/**
 * The embedded store's collections (issue 31): NeDB, through nedb-promises, used only
 * through its public API (`Datastore.create({ inMemoryOnly: true })`, `insert`, `find`,
 * `findOne`, `count`, `remove`, `ensureIndex`) as an in-memory query engine, and every byte
 * on disk written by this code, in our own datafile (datafile.ts, through the file-system
 * port). NeDB never sees a file.
 *
 * A write to a collection runs alone (its gate), with no read of that collection running:
 * it changes NeDB's memory first (so NeDB's unique indexes refuse what they refuse before
 * anything is written), then appends the records' lines; an append that fails is cut off the
 * file again and NeDB's memory put back as it was, before any reader looks. A reader waits
 * for a running write, so it never sees a write that is not in the file.
 *
 * Cards live in one NeDB datastore per tree, filled the first time the tree is read or
 * written: an open parses the cards' file (the records grouped by tree, kept as parsed) and
 * is done, so a store of 100,000 cards opens without NeDB indexing any of them; and a
 * tree's deletion drops its datastore instead of taking every card out of an index whose
 * keys (a tree id) hold thousands of cards each.
 */
import { randomBytes } from "node:crypto";
import Datastore from "nedb-promises";
import type { BatchMark } from "./datafile-repair.js";
import type { Datafile } from "./datafile.js";
import { recordLine } from "./nedb-recovery.js";

export type Doc = Record<string, unknown>;
type Db = Datastore<Doc>;

/** Reads together, each write alone (with no read running). */
export class Gate {
  private readers = 0;
  private drained: (() => void) | null = null;
  private writer: Promise<void> | null = null;
  private tail: Promise<unknown> = Promise.resolve();
  /** Writes begun so far: what was read under one count may have changed under the next. */
  epoch = 0;

  async read<T>(work: () => Promise<T>): Promise<T> {
    while (this.writer) await this.writer;
    this.readers++;
    try {
      return await work();
    } finally {
      if (--this.readers === 0) this.drained?.();
    }
  }

  write<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(async () => {
      let done!: () => void;
      this.writer = new Promise<void>((resolve) => (done = resolve));
      this.epoch++;
      try {
        while (this.readers > 0) await new Promise<void>((resolve) => (this.drained = resolve));
        this.drained = null;
        return await work();
      } finally {
        this.writer = null;
        done();
      }
    });
    this.tail = result.catch(() => undefined);
    return result;
  }
}

export function newMemoryDb(): Db {
  return Datastore.create({ inMemoryOnly: true }) as Db;
}

/** A record as the domain wrote it, without an old batch mark that must not be repeated. */
export function unframed(doc: object): Doc {
  const { batch: _stale, ...rest } = doc as Doc;
  return rest;
}

function newBatch(size: number): BatchMark {
  return { id: randomBytes(8).toString("hex"), size };
}

/**
 * The lines of one write: each record (several framed as a batch, so a crash mid-append
 * leaves none of them on the next open), then a `$$deleted` line per removed id.
 */
export function writeLines(records: readonly Doc[], removed: readonly string[]): string {
  const batch = records.length > 1 ? newBatch(records.length) : null;
  let text = "";
  for (const record of records) text += `${recordLine(batch ? { ...record, batch } : record)}\n`;
  for (const id of removed) text += `${JSON.stringify({ $$deleted: true, _id: id })}\n`;
  return text;
}

/**
 * Appends a write's lines to the collection's file (the store's policy: faults, sync); on
 * failure the file is cut back to where it was, and it throws. Provided by the store.
 */
export type Persist = (text: string, lines: number) => Promise<void>;

const ids = (docs: readonly Doc[]) => docs.map((doc) => doc._id as string);

/** Replaces `ids` in `db` by `docs` (NeDB's unique indexes may refuse; `db` is then as it was). Resolves to the records replaced. */
async function replaceIn(db: Db, docs: readonly Doc[], removed: readonly string[], create: boolean): Promise<Doc[]> {
  const touched = create ? [...removed] : [...ids(docs), ...removed];
  const olds = touched.length === 0 ? [] : await db.find({ _id: { $in: touched } });
  if (olds.length > 0) await db.remove({ _id: { $in: ids(olds) } }, { multi: true });
  try {
    if (docs.length > 0) await db.insert([...docs]);
  } catch (err) {
    if (olds.length > 0) await db.insert(olds);
    throw err;
  }
  return olds;
}

/** Puts `db` back as it was before `replaceIn(db, docs, ...)` replaced `olds`. */
async function restoreIn(db: Db, docs: readonly Doc[], olds: readonly Doc[]): Promise<void> {
  const added = ids(docs);
  if (added.length > 0) await db.remove({ _id: { $in: added } }, { multi: true });
  if (olds.length > 0) await db.insert([...olds]);
}

/** An index NeDB keeps on a collection's field. */
export interface IndexDefinition {
  fieldName: string;
  unique?: boolean;
  sparse?: boolean;
}

/** Records a collection keeps for {@link Collection.instantOne}, per field; the longest kept go first. */
export const KEPT_MAX = 10_000;

/** The fields a collection answers `instantOne` for: each names one record at most (`email`: a unique index). */
export type UniqueField = "_id" | "email";

/** A record's own copy: records are JSON data (strings, numbers, arrays, plain objects). */
function copied<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copied) as T;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (value === null || typeof value !== "object") return value;
  const copy: Doc = {};
  // for…in rather than Object.entries: no array per record and per field on each request.
  for (const key in value) copy[key] = copied((value as Doc)[key]);
  return copy as T;
}

/** One collection in one NeDB datastore (users, trees, sessions, scripts). */
export class Collection {
  readonly gate = new Gate();
  readonly db: Db = newMemoryDb();
  /** Records held (what a compaction would write). */
  live = 0;
  /**
   * Records `readOne` found, by field and value, each read under the gate's epoch `keptEpoch`:
   * they count only while no write has begun since (whatever it changes).
   */
  private readonly kept = new Map<UniqueField, Map<unknown, Doc>>();
  private keptEpoch = 0;

  constructor(
    readonly name: string,
    readonly datafile: Datafile,
    private readonly persist: Persist,
  ) {}

  /** Fills NeDB with the records an open read from the file (before any other call). */
  async fill(docs: Doc[], indexes: readonly IndexDefinition[]): Promise<void> {
    for (const index of indexes) await this.db.ensureIndex(index);
    if (docs.length > 0) await this.db.insert(docs);
    this.live = docs.length;
  }

  read<T>(work: (db: Db) => Promise<T>): Promise<T> {
    return this.gate.read(() => work(this.db));
  }

  /**
   * `findOne({ [field]: value })`, kept for `instantOne`. Resolves to a record of the
   * caller's own, as NeDB's reads do.
   */
  readOne(field: UniqueField, value: string): Promise<Doc | null> {
    return this.gate.read(async () => {
      // No write runs beside a read: what it finds is what the last write finished left.
      const epoch = this.gate.epoch;
      const doc = await this.db.findOne({ [field]: value });
      if (doc) this.keep(field, value, doc, epoch);
      return doc;
    });
  }

  /**
   * The record `readOne(field, value)` would resolve to if called now, without waiting, when
   * a read found it since the last write began: a copy of the caller's own. A write under way
   * has begun, so nothing is answered from before it, and what it is changing is not answered
   * either (no read found it yet). undefined when there is none: then the caller reads. A
   * record nobody read lately, or none at all, is never answered from here.
   */
  instantOne(field: UniqueField, value: string): Doc | undefined {
    if (this.gate.epoch !== this.keptEpoch) return undefined;
    const doc = this.kept.get(field)?.get(value);
    return doc && copied(doc);
  }

  /** Keeps a record read under `epoch`; a read under another epoch than the kept ones' replaces them all. */
  private keep(field: UniqueField, value: string, doc: Doc, epoch: number): void {
    if (this.keptEpoch !== epoch) {
      this.kept.clear();
      this.keptEpoch = epoch;
    }
    let byValue = this.kept.get(field);
    if (!byValue) this.kept.set(field, (byValue = new Map()));
    byValue.set(value, copied(doc));
    if (byValue.size > KEPT_MAX) byValue.delete(byValue.keys().next().value);
  }

  /** Runs `work` as this collection's one write; it writes through `put`. */
  write<T>(work: (put: (records: readonly object[], removed?: readonly string[], create?: boolean) => Promise<void>, db: Db) => Promise<T>): Promise<T> {
    return this.gate.write(() => work((records, removed, create) => this.putHeld(records, removed, create), this.db));
  }

  /** Creates or replaces `records` and removes `removed`, all or nothing; `create`: a record already there is refused. */
  put(records: readonly object[], removed: readonly string[] = [], create = false): Promise<void> {
    return this.gate.write(() => this.putHeld(records, removed, create));
  }

  private async putHeld(records: readonly object[], removed: readonly string[] = [], create = false): Promise<void> {
    if (records.length === 0 && removed.length === 0) return;
    const docs = records.map(unframed);
    const olds = await replaceIn(this.db, docs, removed, create);
    try {
      await this.persist(writeLines(docs, removed), docs.length + removed.length);
    } catch (err) {
      await restoreIn(this.db, docs, olds);
      throw err;
    }
    this.live += docs.length - olds.length;
  }
}

/**
 * Cards: one NeDB datastore per tree, filled from the parsed file on first use. Every
 * record keeps its tree: the card ids' tree is known without NeDB (`treeOf`).
 */
export class CardCollection {
  readonly gate = new Gate();
  /** Trees whose cards are in NeDB. */
  private readonly warm = new Map<string, Db>();
  /** Trees whose cards are still as the open parsed them. */
  private readonly cold = new Map<string, Doc[]>();
  private readonly warming = new Map<string, Promise<Db>>();
  /** Every card's tree. */
  private readonly treeOf = new Map<string, string>();
  /**
   * Live cards per tree, counted once and kept until a write touches the tree: a user's
   * record counts the cards of every tree they can open on each `/api/index` and GraphQL
   * `me`, which scanned every tree (and loaded each cold one into NeDB) every time.
   */
  private readonly liveCounts = new Map<string, number>();

  constructor(
    readonly datafile: Datafile,
    private readonly persist: Persist,
  ) {}

  get live(): number {
    return this.treeOf.size;
  }

  /** Takes the records an open read from the file (before any other call). */
  fill(docs: readonly Doc[]): void {
    for (const doc of docs) {
      const treeId = doc.treeId as string;
      let group = this.cold.get(treeId);
      if (!group) this.cold.set(treeId, (group = []));
      group.push(doc);
      this.treeOf.set(doc._id as string, treeId);
    }
  }

  /** Every tree that has cards. */
  treeIds(): string[] {
    return [...new Set([...this.warm.keys(), ...this.cold.keys()])];
  }

  /** The tree's datastore, filled from the parsed records the first time; null when it has no cards. */
  private async tree(treeId: string, create = false): Promise<Db | null> {
    const warm = this.warm.get(treeId);
    if (warm) return warm;
    const cold = this.cold.get(treeId);
    if (!cold && !create) return null;
    let warming = this.warming.get(treeId);
    if (!warming) {
      warming = (async () => {
        const db = newMemoryDb();
        if (cold && cold.length > 0) await db.insert(cold);
        this.warm.set(treeId, db);
        this.cold.delete(treeId);
        return db;
      })().finally(() => this.warming.delete(treeId));
      this.warming.set(treeId, warming);
    }
    return warming;
  }

  read<T>(work: () => Promise<T>): Promise<T> {
    return this.gate.read(work);
  }

  async byId(id: string, query: Doc = {}): Promise<Doc | null> {
    return this.gate.read(async () => {
      const treeId = this.treeOf.get(id);
      const db = treeId === undefined ? null : await this.tree(treeId);
      return db ? db.findOne({ ...query, _id: id }) : null;
    });
  }

  async ofTree(treeId: string, query: Doc): Promise<Doc[]> {
    return this.gate.read(async () => (await (await this.tree(treeId))?.find(query)) ?? []);
  }

  /** How many live cards (no `trashed`) the trees hold; a cold tree is counted where it lies, not loaded. */
  async countLive(treeIds: readonly string[]): Promise<number> {
    return this.gate.read(async () => {
      let count = 0;
      for (const treeId of new Set(treeIds)) count += await this.liveCount(treeId);
      return count;
    });
  }

  private async liveCount(treeId: string): Promise<number> {
    const kept = this.liveCounts.get(treeId);
    if (kept !== undefined) return kept;
    const db = this.warm.get(treeId) ?? (await this.warming.get(treeId));
    // NeDB's `$exists: false` is `=== undefined`.
    const count = db ? await db.count({ trashed: { $exists: false } }) : (this.cold.get(treeId) ?? []).filter((doc) => doc.trashed === undefined).length;
    this.liveCounts.set(treeId, count);
    return count;
  }

  /** Creates or replaces the cards and removes `removed`, all or nothing. */
  put(records: readonly object[], removed: readonly string[] = []): Promise<void> {
    return this.gate.write(() => this.putHeld(records, removed));
  }

  private async putHeld(records: readonly object[], removed: readonly string[]): Promise<void> {
    if (records.length === 0 && removed.length === 0) return;
    const docs = records.map(unframed);
    // Per tree: the records it gets, and the ids it loses (removed, or a card now of another tree).
    // `replaces`: some of its records are already in that tree (else they are all new there,
    // and NeDB need not be searched for them: a card creation's usual case).
    const plans = new Map<string, { docs: Doc[]; removed: string[]; replaces: boolean }>();
    const plan = (treeId: string) => {
      let entry = plans.get(treeId);
      if (!entry) plans.set(treeId, (entry = { docs: [], removed: [], replaces: false }));
      return entry;
    };
    for (const doc of docs) {
      const treeId = doc.treeId as string;
      const was = this.treeOf.get(doc._id as string);
      if (was !== undefined && was !== treeId) plan(was).removed.push(doc._id as string);
      const entry = plan(treeId);
      entry.docs.push(doc);
      if (was === treeId) entry.replaces = true;
    }
    for (const id of removed) {
      const was = this.treeOf.get(id);
      if (was !== undefined) plan(was).removed.push(id);
    }
    for (const treeId of plans.keys()) this.liveCounts.delete(treeId);
    const done: { db: Db; docs: Doc[]; olds: Doc[] }[] = [];
    const undo = async () => {
      for (const step of done.reverse()) await restoreIn(step.db, step.docs, step.olds);
    };
    try {
      for (const [treeId, entry] of plans) {
        const db = (await this.tree(treeId, true))!;
        done.push({ db, docs: entry.docs, olds: await replaceIn(db, entry.docs, entry.removed, !entry.replaces) });
      }
    } catch (err) {
      await undo();
      throw err;
    }
    try {
      await this.persist(writeLines(docs, removed), docs.length + removed.length);
    } catch (err) {
      await undo();
      throw err;
    }
    for (const id of removed) this.treeOf.delete(id);
    for (const doc of docs) this.treeOf.set(doc._id as string, doc.treeId as string);
  }

  /** Removes every card of the tree: one `$$deleted` line each, then its datastore goes. */
  removeTree(treeId: string): Promise<number> {
    return this.gate.write(async () => {
      this.liveCounts.delete(treeId);
      const warm = this.warm.get(treeId);
      const cards = warm ? await warm.find({}, { _id: 1 }) : (this.cold.get(treeId) ?? []);
      const gone = ids(cards);
      if (gone.length === 0) {
        this.warm.delete(treeId);
        this.cold.delete(treeId);
        return 0;
      }
      await this.persist(writeLines([], gone), gone.length);
      this.warm.delete(treeId);
      this.cold.delete(treeId);
      for (const id of gone) this.treeOf.delete(id);
      return gone.length;
    });
  }
}
