/**
 * The embedded store: NeDB (through nedb-promises), one datafile per collection under the
 * data directory. NeDB answers a write only after appending it to the datafile, which is
 * what makes a 201 survive a crash of the process. Query objects stay inside this file.
 *
 * What NeDB does not do by itself, and this adapter adds (docs/reliability.md):
 * - a write of several records is framed as a batch, so a crash mid-append drops all of
 *   it on the next open (datafile-repair.ts), and a torn last line is dropped and logged
 *   instead of tripping NeDB's corruption threshold on a small file;
 * - a failed append (a full disk) is cut off the file and NeDB's in-memory copy, which
 *   NeDB changes before appending and never rolls back, is reloaded from the file inside
 *   the same queue turn, so no reader ever sees the rejected write;
 * - compaction runs in slices beside the queue instead of in it (nedb-compaction.ts);
 * - cards whose tree is gone (a crash between writing a new tree's cards and the tree)
 *   are swept at open.
 */
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import Datastore from "nedb-promises";
import type { Change } from "../shared/changes.js";
import { ConflictError } from "../shared/errors.js";
import { ChangeLog, ChangeLogUndoError } from "./change-log.js";
import type { StoredCard, StoredScript, StoredUser, Tree } from "../shared/records.js";
import type { BatchMark } from "./datafile-repair.js";
import { lockDataDir } from "./data-dir-lock.js";
import { PRIVATE_DIR, tightenDirectory } from "./file-modes.js";
import { HashIndex } from "./nedb-hash-index.js";
import { openIdempotencyFile } from "./idempotency-file.js";
import {
  DatafileCompactor,
  DEFAULT_COMPACTION_POLICY,
  scheduleCompaction,
  type Compactable,
  type CompactionPolicy,
  type CompactionStats,
  type NedbInternals,
} from "./nedb-compaction.js";
import {
  docsFromDatafile,
  fileSize,
  nedbModel,
  parseDatafile,
  repairDatafileOnDisk,
  truncateTo,
  type RepairLog,
} from "./nedb-recovery.js";
import type { Session, Store, StoreStatus } from "../domain/ports/store.js";
import { failedUndo, failLikeFullDisk, type WriteFaults } from "./write-faults.js";

type Doc = Record<string, unknown>;

export const COLLECTIONS = ["users", "trees", "cards", "sessions", "scripts"] as const;
type Collection = (typeof COLLECTIONS)[number];

const require = createRequire(import.meta.url);
const nedbStorage = require("@seald-io/nedb/lib/storage.js") as { ensureDatafileIntegrityAsync(file: string): Promise<void> };
/** NeDB's default `corruptAlertThreshold`. */
const CORRUPT_ALERT_THRESHOLD = 0.1;

/** The parts of @seald-io/nedb that nedb-promises does not wrap. */
interface Original extends NedbInternals {
  persistence: {
    persistNewStateAsync(docs: Doc[]): Promise<void>;
    loadDatabaseAsync(): Promise<void>;
  };
  executor: NedbInternals["executor"] & { processBuffer(): void };
  _resetIndexes(docs?: Doc[]): void;
  _updateIndexes(modifications: { oldDoc: Doc; newDoc: Doc }[]): void;
  _insertMultipleDocsInCache(docs: Doc[]): void;
  stopAutocompaction(): void;
  compactDatafileAsync(): Promise<void>;
}
interface IndexUndo {
  revertUpdate(modifications: { oldDoc: Doc; newDoc: Doc }[]): void;
}
// Called on the wrapped datastore itself: through nedb-promises' proxy, these methods'
// own property writes are refused.
const original = (db: Datastore<Doc>) => (db as unknown as { __original: Original }).__original;

export interface StoreOptions {
  /** Where repairs and write failures are reported (the server's logger). */
  log?: RepairLog;
  compaction?: CompactionPolicy;
  /** Failures to inject into appends (the reliability tests); none by default. */
  faults?: WriteFaults;
}

/** The embedded store, plus what only this adapter can do (measurements call it). */
export interface NedbStore extends Store {
  /** Compacts every datafile now; resolves to per-collection figures. */
  compactNow(): Promise<Record<string, CompactionStats>>;
}

/** Thrown by every call once the store could not restore a consistent state. */
export class StoreFailedError extends Error {}

function withoutNedbFields<T>(doc: Doc | null): T | null {
  return (doc as T | null) ?? null;
}

/** A record as the domain wrote it, without an old batch mark that must not be repeated. */
function unframed(doc: object): Doc {
  const { batch: _stale, ...rest } = doc as Doc;
  return rest;
}

function newBatch(size: number): BatchMark {
  return { id: randomBytes(8).toString("hex"), size };
}

/**
 * NeDB's load, done faster (it is most of the start-up time of a large store):
 * - the file is read once, repaired (torn tail, cut-short batch) from the same text and
 *   replayed in one synchronous pass (`parseDatafile`) instead of NeDB's stream with a
 *   promise and a reviver per line;
 * - no full rewrite of the file after loading it, as NeDB does on every load: the file as
 *   it stands is a valid append log, and the sliced compactor rewrites it once the
 *   superseded lines it holds (counted here) pile up.
 * Everything else is NeDB's: the take-over of a `NAME~` left by a compaction, the
 * corruption threshold (10% of lines, NeDB's default), and the indexes the file defines,
 * though as hash indexes (nedb-hash-index.ts). It runs in NeDB's queue, as NeDB's own
 * load does.
 */
function loadQuickly(db: Datastore<Doc>, file: string, log: RepairLog, compactor: DatafileCompactor): Promise<void> {
  const nedb = original(db);
  nedb.persistence.loadDatabaseAsync = async () => {
    nedb._resetIndexes();
    await nedbStorage.ensureDatafileIntegrityAsync(file);
    const parsed = parseDatafile(await repairDatafileOnDisk(file, log));
    if (parsed.lines > 0 && parsed.corrupt / parsed.lines > CORRUPT_ALERT_THRESHOLD) {
      throw new Error(
        `${Math.floor((100 * parsed.corrupt) / parsed.lines)}% of ${path.basename(file)} is corrupt, more than 10%: refusing to open the store rather than lose data.`,
      );
    }
    nedb.indexes._id = new HashIndex({ fieldName: "_id", unique: true });
    for (const definition of parsed.indexes) nedb.indexes[definition.fieldName] = new HashIndex(definition);
    try {
      nedb._resetIndexes(parsed.docs);
    } catch (err) {
      nedb._resetIndexes();
      throw err;
    }
    compactor.appendedLines = parsed.lines - parsed.docs.length;
    nedb.executor.processBuffer();
  };
  return db.load();
}

export async function openNedbStore(dataDir: string, options: StoreOptions = {}): Promise<NedbStore> {
  const log: RepairLog = options.log ?? ((message, fields) => process.stderr.write(`${message} ${JSON.stringify(fields)}\n`));
  await mkdir(dataDir, { recursive: true, mode: PRIVATE_DIR });
  const unlock = await lockDataDir(dataDir);
  let status: StoreStatus = "open";
  let failure: Error | null = null;

  const fileOf = (name: Collection) => path.join(dataDir, `${name}.db`);
  const compactors = new Map<Collection, DatafileCompactor>();
  const open = (name: Collection) => {
    const db = Datastore.create({ filename: fileOf(name), autoload: false }) as Datastore<Doc>;
    const nedb = original(db);
    const file = fileOf(name);
    const compactor = new DatafileCompactor(nedb, file);
    compactors.set(name, compactor);
    const append = nedb.persistence.persistNewStateAsync.bind(nedb.persistence);
    // Runs inside NeDB's queue turn for the write, after NeDB changed its memory copy.
    nedb.persistence.persistNewStateAsync = async (docs: Doc[]) => {
      if (failure) throw failure;
      const before = await fileSize(file);
      const fault = options.faults?.take(name) ?? null;
      try {
        if (fault) failLikeFullDisk(file, docs.map((d) => `${nedbModel.serialize(d)}\n`).join(""));
        await append(docs);
        compactor.appendedLines += docs.length;
      } catch (err) {
        try {
          if (fault?.stuck) failedUndo();
          await truncateTo(file, before);
          nedb._resetIndexes(await docsFromDatafile(file));
          log("a write failed and was undone", { collection: name, error: String(err) });
        } catch (recoveryError) {
          failure = new StoreFailedError(`The store could not undo a failed write: ${String(recoveryError)}`);
          status = "failed";
          log("the store failed: a failed write could not be undone", {
            collection: name,
            error: String(err),
            recoveryError: String(recoveryError),
          });
        }
        throw err;
      }
    };
    return db;
  };
  const users = open("users");
  const trees = open("trees");
  const cards = open("cards");
  const sessions = open("sessions");
  const scripts = open("scripts");
  const byName: Record<Collection, Datastore<Doc>> = { users, trees, cards, sessions, scripts };
  const all = [users, trees, cards, sessions, scripts];
  for (const name of COLLECTIONS) await loadQuickly(byName[name], fileOf(name), log, compactors.get(name)!);
  const idempotency = await openIdempotencyFile(path.join(dataDir, "idempotency.log"), log);
  const changeLog = await ChangeLog.open(dataDir, log, options.faults);
  // After the load, which creates missing datafiles with the umask's mode.
  await tightenDirectory(dataDir);

  await users.ensureIndex({ fieldName: "email", unique: true });
  await trees.ensureIndex({ fieldName: "users" });
  await trees.ensureIndex({ fieldName: "publicUrl", unique: true, sparse: true });
  await cards.ensureIndex({ fieldName: "treeId" });
  await cards.ensureIndex({ fieldName: "parentId" });
  await sessions.ensureIndex({ fieldName: "userId" });
  await scripts.ensureIndex({ fieldName: "userId" });
  // An index created just now (a new data directory) is NeDB's own AVL tree.
  for (const db of all) useHashIndexes(original(db));

  await recoverFromChangeLog(changeLog, trees, cards, log);
  await sweepCardsWithoutTree(trees, cards, log);
  const compaction = options.compaction ?? DEFAULT_COMPACTION_POLICY;
  const stopCompaction = scheduleCompaction(
    [...compactors.values(), logCompactor(changeLog)],
    compaction,
    (err, file) => log("compaction failed; the datafile is unchanged", { file: path.basename(file), error: String(err) }),
  );

  /** Puts the store in its failed state: every call throws from now on. */
  const fail = (message: string, fields: Record<string, unknown>) => {
    failure = new StoreFailedError(`${message}: ${JSON.stringify(fields)}`);
    status = "failed";
    log(`the store failed: ${message}`, fields);
  };

  const read = <T>(promise: Promise<T>): Promise<T> => {
    if (failure) throw failure;
    return promise;
  };

  return {
    status: () => status,
    compactNow: async () => {
      const stats: Record<string, CompactionStats> = {};
      for (const [name, compactor] of compactors) stats[name] = await compactor.compact();
      const started = performance.now();
      await changeLog.compact();
      const ms = performance.now() - started;
      stats.changes = { records: -1, queueHeldMs: ms, longestSliceMs: ms, totalMs: ms };
      return stats;
    },
    users: {
      insert: async (user) => {
        await users.insert(user);
      },
      byId: async (id) => withoutNedbFields<StoredUser>(await read(users.findOne({ _id: id }))),
      byIds: async (ids) => (await read(users.find({ _id: { $in: [...ids] } }))) as unknown as StoredUser[],
      byEmail: async (email) => withoutNedbFields<StoredUser>(await read(users.findOne({ email }))),
      list: async () => (await read(users.find({}).sort({ createdAt: 1 }))) as unknown as StoredUser[],
      update: async (id, fields) =>
        withoutNedbFields<StoredUser>(
          (await users.update({ _id: id }, { $set: fields }, { returnUpdatedDocs: true })) as Doc | null,
        ),
    },
    trees: {
      byId: async (id) => withoutNedbFields<Tree>(await read(trees.findOne({ _id: id }))),
      byPublicUrl: async (publicUrl) => withoutNedbFields<Tree>(await read(trees.findOne({ publicUrl }))),
      forUser: async (userId) => (await read(trees.find({ users: userId }))) as unknown as Tree[],
      removeWithCards: async (id) => {
        // The tree first: a crash in between leaves cards of no tree, which nobody can
        // reach and the next open sweeps, never a tree with part of its cards.
        // Marked in the log first, so that an open after a crash finishes the deletion
        // instead of applying the tree's changes again.
        if (failure) throw failure;
        await changeLog.treeRemoved(id);
        await trees.remove({ _id: id }, {});
        await cards.remove({ treeId: id }, { multi: true });
      },
    },
    cards: {
      byId: async (id) => withoutNedbFields<StoredCard>(await read(cards.findOne({ _id: id }))),
      trashedByTree: async (treeId) =>
        (await read(cards.find({ treeId, trashed: { $exists: true } }))) as unknown as StoredCard[],
      liveById: async (id) =>
        withoutNedbFields<StoredCard>(await read(cards.findOne({ _id: id, trashed: { $exists: false } }))),
      liveByTree: async (treeId) =>
        (await read(cards.find({ treeId, trashed: { $exists: false } }))) as unknown as StoredCard[],
      countLiveByTrees: async (treeIds) =>
        treeIds.length === 0
          ? 0
          : await read(cards.count({ treeId: { $in: [...treeIds] }, trashed: { $exists: false } })),
    },
    changes: {
      commit: async (change, tree) => {
        if (failure) throw failure;
        if (changeLog.latestRevision(change.treeId) >= change.revision) {
          throw new ConflictError("The tree changed meanwhile; try again.");
        }
        let entry;
        try {
          entry = await changeLog.append(change, tree);
        } catch (err) {
          if (err instanceof ChangeLogUndoError) fail("a failed append to the change log could not be undone", { error: String(err) });
          else log("a write failed and was undone", { collection: "changes", error: String(err) });
          throw err;
        }
        let cardsApplied = false;
        try {
          await putMany(cards, change.after);
          cardsApplied = true;
          await putMany(trees, [tree]);
        } catch (err) {
          // Nothing of a change that failed may stay visible: its cards go back to how
          // they were and the log says it did not happen.
          try {
            if (cardsApplied) await revertCards(cards, change);
            await changeLog.abort(entry);
          } catch (undoError) {
            fail("a failed change could not be undone", { error: String(err), undoError: String(undoError) });
          }
          throw err;
        }
        changeLog.applied(entry);
      },
      since: async (treeId, since, limit) => {
        if (failure) throw failure;
        const entries = changeLog.entries(treeId).filter((entry) => entry.revision > since);
        return (await changeLog.read(entries.slice(0, limit))).map((logged) => logged.change);
      },
      history: async (treeId, { before, limit }) => {
        if (failure) throw failure;
        const entries = changeLog.entries(treeId).filter((entry) => before === undefined || entry.revision < before);
        return (await changeLog.read(entries.slice(-limit).reverse())).map((logged) => logged.change);
      },
      ofCard: async (treeId, cardId, limit) => {
        if (failure) throw failure;
        const found: Change[] = [];
        // Newest first; a change that touched many cards is read to see whether this is one.
        const candidates = changeLog
          .entries(treeId)
          .filter((entry) => entry.cardIds === null || entry.cardIds.includes(cardId))
          .reverse();
        for (let i = 0; i < candidates.length && found.length < limit; i += 32) {
          for (const { change } of await changeLog.read(candidates.slice(i, i + 32))) {
            const touches = (card: StoredCard) => card._id === cardId;
            if (found.length < limit && (change.after.some(touches) || change.before.some(touches))) found.push(change);
          }
        }
        return found;
      },
      prune: async (olderThan) => {
        if (failure) throw failure;
        return changeLog.prune(olderThan);
      },
    },
    sessions: {
      insert: async (session) => {
        await sessions.insert(session);
      },
      byId: async (id) => withoutNedbFields<Session>(await read(sessions.findOne({ _id: id }))),
      remove: async (id) => {
        await sessions.remove({ _id: id }, {});
      },
      removeForUser: async (userId, exceptId) => {
        const query: Doc = exceptId ? { userId, _id: { $ne: exceptId } } : { userId };
        await sessions.remove(query, { multi: true });
      },
      removeExpired: async (now) => {
        await sessions.remove({ expiresAt: { $lt: now } }, { multi: true });
      },
    },
    scripts: {
      insert: async (script) => {
        await scripts.insert(script);
      },
      byId: async (id) => withoutNedbFields<StoredScript>(await read(scripts.findOne({ _id: id }))),
      forUser: async (userId) =>
        (await read(scripts.find({ userId }).sort({ createdAt: 1, _id: 1 }))) as unknown as StoredScript[],
      replace: async (script) => {
        await scripts.update({ _id: script._id }, script);
      },
      remove: async (id) => {
        await scripts.remove({ _id: id }, {});
      },
    },
    idempotency,
    close: async () => {
      if (status === "closed") return;
      await stopCompaction();
      // NeDB's compaction is queued after every pending write, so this also flushes; it
      // leaves one line per record for a fast next start. A failed store is left as it is.
      if (!failure) await Promise.all(all.map((db) => original(db).compactDatafileAsync()));
      await changeLog.close();
      await idempotency.close();
      status = "closed";
      // NeDB's own compaction above wrote new files with the umask's mode.
      await tightenDirectory(dataDir).catch((err) => log("could not make the data files private", { error: String(err) }));
      await unlock();
    },
  };
}

/**
 * Creates or replaces each record, in NeDB's memory and in one append, as NeDB's own update
 * does (so the adapter's append hook undoes a failed one). Several records are framed as a
 * batch, so a crash mid-append leaves none of them on the next open.
 */
function putMany(db: Datastore<Doc>, records: readonly object[]): Promise<void> {
  if (records.length === 0) return Promise.resolve();
  const nedb = original(db);
  return nedb.executor.pushAsync(async () => {
    const modifications: { oldDoc: Doc; newDoc: Doc }[] = [];
    const inserts: Doc[] = [];
    for (const record of records) {
      const doc = structuredClone(unframed(record));
      const old = (nedb.indexes._id as unknown as HashIndex).getMatching(doc._id)[0];
      if (old) modifications.push({ oldDoc: old, newDoc: doc });
      else inserts.push(doc);
    }
    nedb._updateIndexes(modifications);
    try {
      nedb._insertMultipleDocsInCache(inserts);
    } catch (err) {
      for (const index of Object.values(nedb.indexes)) (index as unknown as IndexUndo).revertUpdate(modifications);
      throw err;
    }
    const docs = [...modifications.map((m) => m.newDoc), ...inserts];
    const batch = docs.length > 1 ? newBatch(docs.length) : null;
    await nedb.persistence.persistNewStateAsync(batch ? docs.map((doc) => ({ ...doc, batch })) : docs);
  });
}

/** Puts a change's cards back as they were before it: the touched ones restored, the created ones removed. */
async function revertCards(cards: Datastore<Doc>, change: Change): Promise<void> {
  await putMany(cards, change.before);
  const known = new Set(change.before.map((card) => card._id));
  const created = change.after.filter((card) => !known.has(card._id)).map((card) => card._id);
  if (created.length > 0) await cards.remove({ _id: { $in: created } }, { multi: true });
}

/**
 * At open: finishes the deletion of trees the log says were deleted, and applies again
 * every logged change past the revision its tree's record holds (a crash between the log
 * and the datafiles). Changes carry whole records, so this is safe to repeat.
 */
async function recoverFromChangeLog(changeLog: ChangeLog, trees: Datastore<Doc>, cards: Datastore<Doc>, log: RepairLog): Promise<void> {
  const stored = new Map(original(trees).getAllData().map((t) => [t._id as string, t]));
  const deleted = [...changeLog.removedTrees].filter((id) => stored.has(id));
  if (deleted.length > 0) {
    await trees.remove({ _id: { $in: deleted } }, { multi: true });
    log("finished deleting trees a crash interrupted", { trees: deleted.length });
  }
  let replayed = 0;
  for (const treeId of changeLog.treeIds()) {
    const revision = (stored.get(treeId)?.revision as number | undefined) ?? 0;
    const missing = changeLog.entries(treeId).filter((entry) => entry.revision > revision);
    for (const { change, tree } of await changeLog.read(missing)) {
      await putMany(cards, change.after);
      await putMany(trees, [tree]);
      replayed++;
    }
  }
  if (replayed > 0) log("applied logged changes a crash kept from the datafiles", { changes: replayed });
}

/**
 * The change log as one more file for the compaction schedule: rewritten once lines that no
 * longer count (deleted trees, aborted or pruned changes) are at least half of it and at
 * least 256 bytes per line the policy asks of a datafile.
 */
function logCompactor(changeLog: ChangeLog): Compactable {
  return {
    file: changeLog.file,
    due: (policy) => changeLog.wantsCompaction(Math.max(1 << 20, policy.minAppendedLines * 256)),
    compact: () => changeLog.compact(),
    idle: () => changeLog.idle(),
  };
}

/** Replaces any NeDB index (built by `ensureIndex`) with a hash index on the same field. */
function useHashIndexes(nedb: Original): void {
  const all = nedb.getAllData();
  for (const [name, index] of Object.entries(nedb.indexes)) {
    if (index instanceof HashIndex) continue;
    const replacement = new HashIndex(index);
    replacement.insert(all);
    nedb.indexes[name] = replacement;
  }
}

/** Cards whose tree does not exist: left by a crash while a tree was created or deleted. */
async function sweepCardsWithoutTree(trees: Datastore<Doc>, cards: Datastore<Doc>, log: RepairLog): Promise<void> {
  // Read from NeDB's memory directly: a find would copy all 100,000 cards to look at two fields.
  const treeIds = new Set(original(trees).getAllData().map((t) => t._id as string));
  const stray = original(cards)
    .getAllData()
    .filter((c) => !treeIds.has(c.treeId as string))
    .map((c) => c._id as string);
  if (stray.length === 0) return;
  await cards.remove({ _id: { $in: stray } }, { multi: true });
  log("removed cards of trees that do not exist (an interrupted tree creation or deletion)", { cards: stray.length });
}
