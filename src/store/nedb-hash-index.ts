/**
 * A hash index for NeDB, put in the place of NeDB's own (an AVL tree per indexed field).
 *
 * Why: opening a store of 100,000 cards spent about 1.4 s of CPU building NeDB's AVL
 * trees (a `compareThings` call per node visited, a rebalance per insert) and held an
 * AVL node of nine fields per card and index. Every query Cardtree makes on an indexed
 * field is an equality or `$in` (by id, by tree, by email, by user), which a `Map` answers
 * at least as well, and is built in one pass. Range queries (`$lt`, `$gt`, ...) on an
 * indexed field still work, by a scan; none of the store's queries makes one.
 *
 * It keeps NeDB's index contract (@seald-io/nedb lib/indexes.js), which the datastore
 * calls for every insert, update and remove: a document whose field is an array is indexed
 * under each distinct element; a sparse index skips documents without the field; a unique
 * index refuses a second document under a key with NeDB's own error (`errorType:
 * "uniqueViolated"`), and a call that fails part-way undoes what it did. Keys are equal as
 * NeDB's index finds them equal for the values a JSON record holds: the same string,
 * number, boolean or null, a missing field, or dates at the same time. Documents come back
 * in the order they were indexed, not sorted by key; nothing in the store relies on the
 * order of an unsorted query.
 */

import { nedbModel as model } from "./nedb-recovery.js";

type Doc = Record<string, unknown>;

export interface IndexOptions {
  fieldName: string;
  unique?: boolean;
  sparse?: boolean;
}

/** A Date key is looked up by its time, as NeDB's comparison does. */
const DATE_KEY = Symbol("date");
type DateKey = { [DATE_KEY]: number };
const dateKeys = new Map<number, DateKey>();

function normalize(key: unknown): unknown {
  if (key instanceof Date) {
    const time = key.getTime();
    let shared = dateKeys.get(time);
    if (!shared) {
      shared = { [DATE_KEY]: time };
      dateKeys.set(time, shared);
    }
    return shared;
  }
  return key;
}

function plainKey(key: unknown): unknown {
  return typeof key === "object" && key !== null && DATE_KEY in key ? new Date((key as DateKey)[DATE_KEY]) : key;
}

function uniqueViolation(key: unknown): Error {
  const error = new Error(`Can't insert key ${JSON.stringify(key)}, it violates the unique constraint`) as Error & {
    key: unknown;
    errorType: string;
  };
  error.key = key;
  error.errorType = "uniqueViolated";
  return error;
}

/** The documents under one key: the document itself while it is the only one. */
type Entry = Doc | Set<Doc>;

function* docsOf(entry: Entry | undefined): Iterable<Doc> {
  if (entry === undefined) return;
  if (entry instanceof Set) yield* entry;
  else yield entry;
}

export class HashIndex {
  readonly fieldName: string;
  readonly unique: boolean;
  readonly sparse: boolean;
  private readonly fields: string[];
  /** A plain field name: read directly, without NeDB's dotted-path walk. */
  private readonly plainField: string | null;
  /** key → the documents under it, in the order they were indexed. */
  private entries = new Map<unknown, Entry>();
  /** Whether a document was ever indexed under several keys (an array field). */
  private multiKey = false;

  constructor(options: IndexOptions) {
    if (typeof options.fieldName !== "string") throw new Error("fieldName must be a string");
    this.fieldName = options.fieldName;
    this.fields = options.fieldName.split(",");
    this.plainField = /^[^.,]+$/.test(options.fieldName) ? options.fieldName : null;
    this.unique = options.unique ?? false;
    this.sparse = options.sparse ?? false;
  }

  reset(newData?: Doc | Doc[]): void {
    this.entries = new Map();
    this.multiKey = false;
    if (newData) this.insert(newData);
  }

  /** The distinct keys `doc` is indexed under; none for a sparse index's missing field. */
  private keysOf(doc: Doc): unknown[] {
    const value = this.plainField === null ? model.getDotValues(doc, this.fields) : doc[this.plainField];
    // NeDB's test, kept as it is: it also takes a Date or an empty array for a missing field.
    const missing =
      value === undefined ||
      (typeof value === "object" && value !== null && Object.values(value).every((part) => part === undefined));
    if (missing && this.sparse) return [];
    if (!Array.isArray(value)) return [normalize(value)];
    this.multiKey = true;
    return [...new Set(value.map(normalize))];
  }

  private add(key: unknown, doc: Doc): void {
    const entry = this.entries.get(key);
    if (entry === undefined) {
      this.entries.set(key, doc);
      return;
    }
    if (this.unique) throw uniqueViolation(plainKey(key));
    if (entry instanceof Set) entry.add(doc);
    else if (entry !== doc) this.entries.set(key, new Set([entry, doc]));
  }

  private delete(key: unknown, doc: Doc): void {
    const entry = this.entries.get(key);
    if (entry === doc) this.entries.delete(key);
    else if (entry instanceof Set) {
      entry.delete(doc);
      if (entry.size === 1) this.entries.set(key, entry.values().next().value!);
    }
  }

  insert(doc: Doc | Doc[]): void {
    if (Array.isArray(doc)) {
      this.insertMultipleDocs(doc);
      return;
    }
    const keys = this.keysOf(doc);
    for (let i = 0; i < keys.length; i++) {
      try {
        this.add(keys[i], doc);
      } catch (error) {
        for (let j = 0; j < i; j++) this.delete(keys[j], doc);
        throw error;
      }
    }
  }

  insertMultipleDocs(docs: Doc[]): void {
    for (let i = 0; i < docs.length; i++) {
      try {
        this.insert(docs[i]);
      } catch (error) {
        for (let j = 0; j < i; j++) this.remove(docs[j]);
        throw error;
      }
    }
  }

  remove(doc: Doc | Doc[]): void {
    if (Array.isArray(doc)) {
      for (const one of doc) this.remove(one);
      return;
    }
    for (const key of this.keysOf(doc)) this.delete(key, doc);
  }

  update(oldDoc: Doc | { oldDoc: Doc; newDoc: Doc }[], newDoc?: Doc): void {
    if (Array.isArray(oldDoc)) {
      this.updateMultipleDocs(oldDoc);
      return;
    }
    this.remove(oldDoc);
    try {
      this.insert(newDoc!);
    } catch (error) {
      this.insert(oldDoc);
      throw error;
    }
  }

  updateMultipleDocs(pairs: { oldDoc: Doc; newDoc: Doc }[]): void {
    for (const pair of pairs) this.remove(pair.oldDoc);
    for (let i = 0; i < pairs.length; i++) {
      try {
        this.insert(pairs[i].newDoc);
      } catch (error) {
        for (let j = 0; j < i; j++) this.remove(pairs[j].newDoc);
        for (const pair of pairs) this.insert(pair.oldDoc);
        throw error;
      }
    }
  }

  revertUpdate(oldDoc: Doc | { oldDoc: Doc; newDoc: Doc }[], newDoc?: Doc): void {
    if (Array.isArray(oldDoc)) this.update(oldDoc.map((pair) => ({ oldDoc: pair.newDoc, newDoc: pair.oldDoc })));
    else this.update(newDoc!, oldDoc);
  }

  getMatching(value: unknown): Doc[] {
    if (!Array.isArray(value)) return [...docsOf(this.entries.get(normalize(value)))];
    const byId = new Map<unknown, Doc>();
    // An element that is itself an array is looked up element by element, as NeDB does.
    for (const one of value) for (const doc of this.getMatching(one)) byId.set(doc._id, doc);
    return [...byId.values()];
  }

  /** `{$lt, $lte, $gt, $gte}` on the key, by a scan (no store query makes one). */
  getBetweenBounds(query: Record<string, unknown>): Doc[] {
    const inBounds = (key: unknown) => {
      const plain = plainKey(key);
      if ("$gt" in query && !(model.compareThings(plain, query.$gt) > 0)) return false;
      if ("$gte" in query && !(model.compareThings(plain, query.$gte) >= 0)) return false;
      if ("$lt" in query && !(model.compareThings(plain, query.$lt) < 0)) return false;
      if ("$lte" in query && !(model.compareThings(plain, query.$lte) <= 0)) return false;
      return true;
    };
    const found: Doc[] = [];
    for (const [key, entry] of this.entries) if (inBounds(key)) found.push(...docsOf(entry));
    return found;
  }

  /** Every indexed document, once. */
  getAll(): Doc[] {
    const all: Doc[] = [];
    for (const entry of this.entries.values()) {
      if (entry instanceof Set) for (const doc of entry) all.push(doc);
      else all.push(entry);
    }
    return this.multiKey ? [...new Set(all)] : all;
  }
}
