/**
 * The embedded store: NeDB (through nedb-promises), one datafile per collection under the
 * data directory. NeDB answers a write only after its append hook resolved, and the hook
 * writes the lines itself through the file-system port (file-system.ts, datafile.ts): NeDB
 * writes no byte of its own. Query objects stay inside this file.
 *
 * Power loss (docs/reliability.md, "Power loss"): a change is answered once its line in the
 * change log is on stable storage (group commit, change-log.ts); cards and trees are
 * checkpointed rather than synced per write, and an open redoes the log past the
 * checkpoints; every other collection is synced by each write. `SYNC=off` answers sooner.
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
import path from "node:path";
import Datastore from "nedb-promises";
import type { Change } from "../shared/changes.js";
import { ConflictError } from "../shared/errors.js";
import { ChangeLog, ChangeLogSyncError, ChangeLogUndoError, type LogEntry } from "./change-log.js";
import type { StoredCard, StoredScript, StoredUser, Tree } from "../shared/records.js";
import { Datafile, type CheckpointUse } from "./datafile.js";
import type { BatchMark } from "./datafile-repair.js";
import { nodeFileSystem, type FileSystem, type SyncMode } from "./file-system.js";
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
import { docsFromDatafile, nedbModel, parseDatafile, type RepairLog } from "./nedb-recovery.js";
import type { Session, Store, StoreStatus } from "../domain/ports/store.js";
import { failedUndo, failLikeFullDisk, type WriteFaults } from "./write-faults.js";

type Doc = Record<string, unknown>;

export const COLLECTIONS = ["users", "trees", "cards", "sessions", "scripts"] as const;
type Collection = (typeof COLLECTIONS)[number];

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
  /** Where the files are (the power-cut tests give a simulated disk); the real one by default. */
  fs?: FileSystem;
  /** `off`: writes are answered before they are on stable storage (`SYNC`, src/config.ts). */
  sync?: SyncMode;
  checkpoint?: CheckpointPolicy;
}

/** The embedded store, plus what only this adapter can do (measurements call it). */
export interface NedbStore extends Store {
  /** Compacts every datafile now; resolves to per-collection figures. */
  compactNow(): Promise<Record<string, CompactionStats>>;
  /** Checkpoints the redo-logged datafiles now (the power-cut tests). */
  checkpointNow(): Promise<void>;
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
 * - the file is read once (through the port: datafile.ts, which also takes over a `NAME~`
 *   left by a compaction, cuts a redo-logged file back to its checkpoint and drops an
 *   unfinished tail) and replayed in one synchronous pass (`parseDatafile`) instead of
 *   NeDB's stream with a promise and a reviver per line;
 * - no full rewrite of the file after loading it, as NeDB does on every load: the file as
 *   it stands is a valid append log, and the sliced compactor rewrites it once the
 *   superseded lines it holds (counted here) pile up.
 * NeDB's corruption threshold (10% of lines, its default) and the indexes the file defines
 * still hold, though as hash indexes (nedb-hash-index.ts). It runs in NeDB's queue, as
 * NeDB's own load does.
 */
function loadQuickly(
  db: Datastore<Doc>,
  open: () => Promise<{ text: string; compactor: DatafileCompactor }>,
  file: string,
): Promise<void> {
  const nedb = original(db);
  nedb.persistence.loadDatabaseAsync = async () => {
    nedb._resetIndexes();
    const { text, compactor } = await open();
    const parsed = parseDatafile(text);
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

/**
 * The collections whose every write is a change in the change log (or a tree's removal,
 * marked there first): their datafiles are not synced per write but checkpointed, and an
 * open redoes from the log what they lost. Every other collection (users, sessions,
 * scripts, and any added later) is synced by each write before it is answered.
 */
const REDO_LOGGED: ReadonlySet<Collection> = new Set<Collection>(["cards", "trees"]);

/** When the redo-logged datafiles are checkpointed (besides at open, close and before the log is compacted). */
export interface CheckpointPolicy {
  /** Look this often (0: never by time; the power-cut tests drive them); */
  intervalMs: number;
  /** and checkpoint once this many bytes of changes were logged since the last one. */
  logBytes: number;
}

export const DEFAULT_CHECKPOINT_POLICY: CheckpointPolicy = { intervalMs: 10_000, logBytes: 16 << 20 };

export async function openNedbStore(dataDir: string, options: StoreOptions = {}): Promise<NedbStore> {
  const log: RepairLog = options.log ?? ((message, fields) => process.stderr.write(`${message} ${JSON.stringify(fields)}\n`));
  const fs = options.fs ?? nodeFileSystem;
  const sync = options.sync ?? "on";
  await fs.mkdir(dataDir);
  const unlock = await fs.lock(dataDir);
  let status: StoreStatus = "open";
  let failure: Error | null = null;

  const fileOf = (name: Collection) => path.join(dataDir, `${name}.db`);
  const compactors = new Map<Collection, DatafileCompactor>();
  const datafiles = new Map<Collection, Datafile>();
  const checkpointUses = new Map<Collection, CheckpointUse>();
  let changeLog: ChangeLog;
  try {
    changeLog = await ChangeLog.open(dataDir, log, { fs, sync, faults: options.faults });
  } catch (err) {
    await unlock();
    throw err;
  }
  const open = (name: Collection) => {
    const db = Datastore.create({ filename: fileOf(name), autoload: false }) as Datastore<Doc>;
    const nedb = original(db);
    const file = fileOf(name);
    // Runs inside NeDB's queue turn for the write, after NeDB changed its memory copy.
    // NeDB itself writes nothing: the lines go through the port (datafile.ts).
    nedb.persistence.persistNewStateAsync = async (docs: Doc[]) => {
      if (failure) throw failure;
      const datafile = datafiles.get(name)!;
      const before = datafile.size;
      const text = docs.map((d) => `${nedbModel.serialize(d)}\n`).join("");
      const fault = options.faults?.take(name) ?? null;
      try {
        if (fault) await failLikeFullDisk((half) => datafile.append(half), file, text);
        await datafile.append(text);
        compactors.get(name)!.appendedLines += docs.length;
        if (!REDO_LOGGED.has(name) && sync === "on") await datafile.datasync();
      } catch (err) {
        try {
          if (fault?.stuck) failedUndo();
          await datafile.truncate(before);
          nedb._resetIndexes(await docsFromDatafile(file, fs));
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
    loaders.set(name, () =>
      loadQuickly(
        db,
        async () => {
          const checkpoint = REDO_LOGGED.has(name) ? changeLog.checkpoints.get(`${name}.db`) : undefined;
          const opened = await Datafile.open(fs, file, log, checkpoint);
          datafiles.set(name, opened.datafile);
          checkpointUses.set(name, opened.checkpointUse);
          const compactor = new DatafileCompactor(nedb, opened.datafile, options.compaction?.sliceMs);
          compactors.set(name, compactor);
          return { text: opened.text, compactor };
        },
        file,
      ),
    );
    return db;
  };
  const loaders = new Map<Collection, () => Promise<void>>();
  const users = open("users");
  const trees = open("trees");
  const cards = open("cards");
  const sessions = open("sessions");
  const scripts = open("scripts");
  const byName: Record<Collection, Datastore<Doc>> = { users, trees, cards, sessions, scripts };
  const all = [users, trees, cards, sessions, scripts];
  let idempotency: Awaited<ReturnType<typeof openIdempotencyFile>> | null = null;

  /**
   * Checkpoints a redo-logged datafile: measures it (size, epoch, and the change every
   * earlier one is finished at) in its queue, syncs it, then logs the checkpoint.
   */
  const checkpoint = (name: Collection): Promise<void> => {
    const datafile = datafiles.get(name)!;
    return datafile.exclusive(async () => {
      const at = await original(byName[name]).executor.pushAsync(async () => ({
        size: datafile.size,
        epoch: datafile.epoch,
        seq: changeLog.finishedThrough(),
        ...(sync === "off" ? { cut: true } : {}),
      }));
      await datafile.datasync();
      await changeLog.checkpoint(`${name}.db`, at);
    });
  };
  let loggedSinceCheckpoint = 0;
  let checkpointing: Promise<void> | null = null;
  const checkpointAll = (): Promise<void> => {
    loggedSinceCheckpoint = 0;
    checkpointing ??= (async () => {
      for (const name of REDO_LOGGED) await checkpoint(name);
    })().finally(() => {
      checkpointing = null;
    });
    return checkpointing;
  };

  try {
    for (const name of COLLECTIONS) await loaders.get(name)!();
    for (const name of REDO_LOGGED) {
      // A compaction swapped a new file in: its checkpoint, logged in the same queue turn, is the new epoch's.
      compactors.get(name)!.afterSwap = async () => {
        const datafile = datafiles.get(name)!;
        await changeLog.checkpoint(`${name}.db`, {
          size: datafile.size,
          epoch: datafile.epoch,
          seq: changeLog.finishedThrough(),
          ...(sync === "off" ? { cut: true } : {}),
        });
      };
    }
    changeLog.beforeCompaction = checkpointAll;
    // Idempotency keys keep their own file (idempotency-file.ts), through the same port.
    idempotency = await openIdempotencyFile(path.join(dataDir, "idempotency.log"), log, { fs, sync });
    // After the load, which creates missing datafiles.
    await fs.makePrivate(dataDir);

    await users.ensureIndex({ fieldName: "email", unique: true });
    await trees.ensureIndex({ fieldName: "users" });
    await trees.ensureIndex({ fieldName: "publicUrl", unique: true, sparse: true });
    await cards.ensureIndex({ fieldName: "treeId" });
    await cards.ensureIndex({ fieldName: "parentId" });
    await sessions.ensureIndex({ fieldName: "userId" });
    await scripts.ensureIndex({ fieldName: "userId" });
    // An index created just now (a new data directory) is NeDB's own AVL tree.
    for (const db of all) useHashIndexes(original(db));

    const cardsCheckpoint = changeLog.checkpoints.get("cards.db");
    const treesCheckpoint = changeLog.checkpoints.get("trees.db");
    if (cardsCheckpoint && treesCheckpoint) {
      const short = checkpointUses.get("cards") === "short" || checkpointUses.get("trees") === "short";
      await redoFromCheckpoint(changeLog, trees, cards, short ? 0 : Math.min(cardsCheckpoint.seq, treesCheckpoint.seq), log);
    } else {
      await recoverFromChangeLog(changeLog, trees, cards, log);
    }
    await sweepCardsWithoutTree(trees, cards, log);
    // What the open rebuilt is on disk before anything new is logged.
    await checkpointAll();
  } catch (err) {
    await idempotency?.close().catch(() => undefined);
    await changeLog.close().catch(() => undefined);
    for (const datafile of datafiles.values()) await datafile.close().catch(() => undefined);
    await unlock();
    throw err;
  }
  const opened = idempotency!;
  const compaction = options.compaction ?? DEFAULT_COMPACTION_POLICY;
  const stopCompaction = scheduleCompaction(
    [...compactors.values(), logCompactor(changeLog)],
    compaction,
    (err, file) => log("compaction failed; the datafile is unchanged", { file: path.basename(file), error: String(err) }),
  );
  const checkpointPolicy = options.checkpoint ?? DEFAULT_CHECKPOINT_POLICY;
  let checkpointTimer: NodeJS.Timeout | null = null;
  const checkpointFailed = (err: unknown) => log("a checkpoint failed; the change log still holds every change", { error: String(err) });
  if (checkpointPolicy.intervalMs > 0) {
    checkpointTimer = setInterval(() => {
      if (loggedSinceCheckpoint > 0 && !failure) checkpointAll().catch(checkpointFailed);
    }, checkpointPolicy.intervalMs);
    checkpointTimer.unref();
  }

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
        try {
          await changeLog.treeRemoved(id);
        } catch (err) {
          if (err instanceof ChangeLogSyncError) fail("the change log could not be synced", { error: String(err) });
          throw err;
        }
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
        let entry: LogEntry;
        try {
          entry = await changeLog.append(change, tree);
        } catch (err) {
          if (err instanceof ChangeLogUndoError) fail("a failed append to the change log could not be undone", { error: String(err) });
          else if (err instanceof ChangeLogSyncError) fail("the change log could not be synced", { error: String(err) });
          else log("a write failed and was undone", { collection: "changes", error: String(err) });
          throw err;
        }
        loggedSinceCheckpoint += entry.length;
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
        if (loggedSinceCheckpoint >= checkpointPolicy.logBytes) checkpointAll().catch(checkpointFailed);
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
    checkpointNow: () => checkpointAll(),
    idempotency: opened,
    close: async () => {
      if (status === "closed") return;
      if (checkpointTimer) clearInterval(checkpointTimer);
      await stopCompaction();
      await checkpointing?.catch(() => undefined);
      // Each compaction is queued after every pending write, so this also flushes; it
      // leaves one line per record for a fast next start (and checkpoints cards and
      // trees). A failed store is left as it is.
      if (!failure) for (const compactor of compactors.values()) await compactor.compact();
      await changeLog.close();
      for (const datafile of datafiles.values()) await datafile.close();
      await opened.close();
      status = "closed";
      await fs.makePrivate(dataDir).catch((err) => log("could not make the data files private", { error: String(err) }));
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
 * At open, when both redo-logged datafiles have a checkpoint (and were cut back to it):
 * finishes the deletion of trees the log says were deleted, undoes again the changes that
 * were aborted after `from` (their undo may have been lost with what the cut dropped), and
 * applies again, in the order they were logged, every change kept after `from`. Changes
 * carry whole records and those of one tree were logged one after another, so this leaves
 * each record as the last change that touched it left it.
 */
async function redoFromCheckpoint(changeLog: ChangeLog, trees: Datastore<Doc>, cards: Datastore<Doc>, from: number, log: RepairLog): Promise<void> {
  const storedRevision = new Map(original(trees).getAllData().map((t) => [t._id as string, (t.revision as number | undefined) ?? 0]));
  const deleted = [...changeLog.removedTrees].filter((id) => storedRevision.has(id));
  if (deleted.length > 0) {
    await trees.remove({ _id: { $in: deleted } }, { multi: true });
    log("finished deleting trees a crash interrupted", { trees: deleted.length });
  }
  const removed = changeLog.removedTrees;
  const aborted = changeLog.abortedAfter(from);
  for (let i = 0; i < aborted.length; i += 32) {
    for (const { change } of await changeLog.read(aborted.slice(i, i + 32))) await revertCards(cards, change);
  }
  const redo = changeLog.changesAfter(from).filter((entry) => !removed.has(entry.treeId));
  for (let i = 0; i < redo.length; i += 32) {
    for (const { change, tree } of await changeLog.read(redo.slice(i, i + 32))) {
      await putMany(cards, change.after);
      await putMany(trees, [tree]);
    }
  }
  // Cards of the deleted trees go with the sweep of cards without a tree, which follows.
  // Reported: the changes whose tree record had not got that far (the rest were redone
  // in case their cards had not, which the tree record cannot tell after a power cut).
  const missing = redo.filter((entry) => entry.revision > (storedRevision.get(entry.treeId) ?? 0)).length;
  if (missing > 0) log("applied logged changes a crash kept from the datafiles", { changes: missing, redone: redo.length });
  if (aborted.length > 0) log("undid again changes aborted after the last checkpoint", { changes: aborted.length });
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
