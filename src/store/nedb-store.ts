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
import type { StoredCard, StoredUser, Tree } from "../shared/records.js";
import type { BatchMark } from "./datafile-repair.js";
import { lockDataDir } from "./data-dir-lock.js";
import { PRIVATE_DIR, tightenDirectory } from "./file-modes.js";
import { HashIndex } from "./nedb-hash-index.js";
import {
  DatafileCompactor,
  DEFAULT_COMPACTION_POLICY,
  scheduleCompaction,
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

export const COLLECTIONS = ["users", "trees", "cards", "sessions", "changes"] as const;
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
  stopAutocompaction(): void;
  compactDatafileAsync(): Promise<void>;
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
  const changes = open("changes");
  const byName: Record<Collection, Datastore<Doc>> = { users, trees, cards, sessions, changes };
  const all = [users, trees, cards, sessions, changes];
  for (const name of COLLECTIONS) await loadQuickly(byName[name], fileOf(name), log, compactors.get(name)!);
  // After the load, which creates missing datafiles with the umask's mode.
  await tightenDirectory(dataDir);

  await users.ensureIndex({ fieldName: "email", unique: true });
  await trees.ensureIndex({ fieldName: "users" });
  await trees.ensureIndex({ fieldName: "publicUrl", unique: true, sparse: true });
  await cards.ensureIndex({ fieldName: "treeId" });
  await cards.ensureIndex({ fieldName: "parentId" });
  await sessions.ensureIndex({ fieldName: "userId" });
  await changes.ensureIndex({ fieldName: "treeId" });
  // An index created just now (a new data directory) is NeDB's own AVL tree.
  for (const db of all) useHashIndexes(original(db));

  await sweepCardsWithoutTree(trees, cards, log);
  const stopCompaction = scheduleCompaction(
    [...compactors.values()],
    options.compaction ?? DEFAULT_COMPACTION_POLICY,
    (err, file) => log("compaction failed; the datafile is unchanged", { file: path.basename(file), error: String(err) }),
  );

  const read = <T>(promise: Promise<T>): Promise<T> => {
    if (failure) throw failure;
    return promise;
  };

  return {
    status: () => status,
    compactNow: async () => {
      const stats: Record<string, CompactionStats> = {};
      for (const [name, compactor] of compactors) stats[name] = await compactor.compact();
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
      insert: async (tree) => {
        await trees.insert(tree);
      },
      byId: async (id) => withoutNedbFields<Tree>(await read(trees.findOne({ _id: id }))),
      byPublicUrl: async (publicUrl) => withoutNedbFields<Tree>(await read(trees.findOne({ publicUrl }))),
      forUser: async (userId) => (await read(trees.find({ users: userId }))) as unknown as Tree[],
      replace: async (tree) => {
        await trees.update({ _id: tree._id }, tree);
      },
      removeWithCards: async (id) => {
        // The tree first: a crash in between leaves cards of no tree, which nobody can
        // reach and the next open sweeps, never a tree with part of its cards.
        await trees.remove({ _id: id }, {});
        await cards.remove({ treeId: id }, { multi: true });
        await changes.remove({ treeId: id }, { multi: true });
      },
    },
    cards: {
      insertMany: async (list) => {
        if (list.length === 0) return;
        if (list.length === 1) {
          await cards.insert(unframed(list[0]));
          return;
        }
        // One append; the batch mark lets the next open drop it whole if it was cut short.
        const batch = newBatch(list.length);
        await cards.insert(list.map((card) => ({ ...unframed(card), batch })));
      },
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
      replace: async (card) => {
        await cards.update({ _id: card._id }, unframed(card));
      },
      trash: async (ids, at) => {
        if (ids.length === 0) return;
        // A subtree goes to the trash whole or not at all, like an import.
        // One card: drop the mark of the import that made it, or its line would read as an
        // unfinished batch of that import's size.
        const update =
          ids.length === 1
            ? { $set: { trashed: at }, $unset: { batch: true } }
            : { $set: { trashed: at, batch: newBatch(ids.length) } };
        await cards.update({ _id: { $in: [...ids] } }, update, { multi: true });
      },
    },
    changes: {
      // A first cut: the change, then its cards, then the tree, each its own append. Not
      // yet atomic across the three files; the durable log replaces this.
      commit: async (change, tree) => {
        const key = `${change.treeId}:${change.revision}`;
        await changes.insert({ ...change, _id: key } as unknown as Doc);
        try {
          const known = new Set(change.before.map((card) => card._id));
          const created = change.after.filter((card) => !known.has(card._id));
          if (created.length === 1) await cards.insert(unframed(created[0]));
          else if (created.length > 1) {
            const batch = newBatch(created.length);
            await cards.insert(created.map((card) => ({ ...unframed(card), batch })));
          }
          for (const card of change.after) if (known.has(card._id)) await cards.update({ _id: card._id }, unframed(card));
          await trees.update({ _id: tree._id }, tree, { upsert: true });
        } catch (err) {
          await changes.remove({ _id: key }, {}).catch(() => {});
          throw err;
        }
      },
      since: async (treeId, since, limit) =>
        (await read(changes.find({ treeId, revision: { $gt: since } }).sort({ revision: 1 }).limit(limit))).map(asChange),
      history: async (treeId, { before, limit }) =>
        (
          await read(
            changes
              .find(before === undefined ? { treeId } : { treeId, revision: { $lt: before } })
              .sort({ revision: -1 })
              .limit(limit),
          )
        ).map(asChange),
      ofCard: async (treeId, cardId, limit) =>
        (
          await read(
            changes
              .find({ treeId, $or: [{ "after._id": cardId }, { "before._id": cardId }] })
              .sort({ revision: -1 })
              .limit(limit),
          )
        ).map(asChange),
      prune: async (olderThan) => {
        const latest = new Map<string, number>();
        for (const doc of original(changes).getAllData()) {
          const treeId = doc.treeId as string;
          latest.set(treeId, Math.max(latest.get(treeId) ?? 0, doc.revision as number));
        }
        const old = original(changes)
          .getAllData()
          .filter((doc) => (doc.at as string) < olderThan && latest.get(doc.treeId as string) !== doc.revision)
          .map((doc) => doc._id as string);
        if (old.length > 0) await changes.remove({ _id: { $in: old } }, { multi: true });
        return old.length;
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
    close: async () => {
      if (status === "closed") return;
      await stopCompaction();
      // NeDB's compaction is queued after every pending write, so this also flushes; it
      // leaves one line per record for a fast next start. A failed store is left as it is.
      if (!failure) await Promise.all(all.map((db) => original(db).compactDatafileAsync()));
      status = "closed";
      // NeDB's own compaction above wrote new files with the umask's mode.
      await tightenDirectory(dataDir).catch((err) => log("could not make the data files private", { error: String(err) }));
      await unlock();
    },
  };
}

function asChange(doc: Doc): Change {
  const { _id: _key, ...change } = doc;
  return change as unknown as Change;
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
