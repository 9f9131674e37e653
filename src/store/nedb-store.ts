/**
 * The embedded store: NeDB (through nedb-promises, its public API only) as the in-memory
 * query engine, and every byte on disk ours: one datafile per collection under the data
 * directory, written through the file-system port (file-system.ts, datafile.ts) by
 * embedded-collections.ts, which says how a write reaches NeDB and the file. Query objects
 * stay inside this file and that one.
 *
 * Power loss (docs/reliability.md, "Power loss"): a change is answered once its line in the
 * change log is on stable storage (group commit, change-log.ts); cards and trees are
 * checkpointed rather than synced per write, and an open redoes the log past the
 * checkpoints; every other collection is synced by each write. `SYNC=off` answers sooner.
 *
 * What this adds beyond keeping records (docs/reliability.md):
 * - a write of several records is framed as a batch, so a crash mid-append drops all of
 *   it on the next open (datafile-repair.ts), and a torn last line is dropped and logged;
 *   more than 10% of a file's lines not parsing refuses the open (NeDB's own threshold);
 * - a failed append (a full disk) is cut off the file and NeDB's memory put back, before
 *   any reader of the collection looks;
 * - compaction runs in slices beside the writes instead of holding them (nedb-compaction.ts);
 * - cards whose tree is gone (a crash between writing a new tree's cards and the tree)
 *   are swept at open.
 */
import path from "node:path";
import type { Change } from "../shared/changes.js";
import { ConflictError } from "../shared/errors.js";
import { ChangeLog, ChangeLogSyncError, ChangeLogUndoError, type LogEntry } from "./change-log.js";
import type { StoredCard, StoredScript, StoredUser, Tree } from "../shared/records.js";
import { Datafile, type CheckpointUse } from "./datafile.js";
import { CardCollection, Collection, type Doc, type IndexDefinition, type Persist } from "./embedded-collections.js";
import { nodeFileSystem, type FileSystem, type SyncMode } from "./file-system.js";
import { openIdempotencyFile } from "./idempotency-file.js";
import {
  DatafileCompactor,
  DEFAULT_COMPACTION_POLICY,
  scheduleCompaction,
  type Compactable,
  type CompactionPolicy,
  type CompactionStats,
} from "./nedb-compaction.js";
import { parseDatafile, type RepairLog } from "./nedb-recovery.js";
import type { ChangeKey, IdempotencyRecord, KeyedChange, Session, Store, StoreStatus } from "../domain/ports/store.js";
import { KEEP_MS } from "../domain/idempotency.js";
import { failedUndo, failLikeFullDisk, type WriteFaults } from "./write-faults.js";

export const COLLECTIONS = ["users", "trees", "cards", "sessions", "scripts"] as const;
type CollectionName = (typeof COLLECTIONS)[number];

/** NeDB's default `corruptAlertThreshold`, kept: more than this share of bad lines refuses the open. */
const CORRUPT_ALERT_THRESHOLD = 0.1;

/** The indexes NeDB keeps (an index NeDB's own datafile once defined is not read: these are the ones). */
const INDEXES: Record<Exclude<CollectionName, "cards">, IndexDefinition[]> = {
  users: [{ fieldName: "email", unique: true }],
  trees: [{ fieldName: "users" }, { fieldName: "publicUrl", unique: true, sparse: true }],
  sessions: [{ fieldName: "userId" }],
  scripts: [{ fieldName: "userId" }],
};

export interface StoreOptions {
  /** Where repairs and write failures are reported (the server's logger). */
  log?: RepairLog;
  /** Where what the store did is reported at close (group commit's figures); nowhere by default. */
  info?: RepairLog;
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

/**
 * The collections whose every write is a change in the change log (or a tree's removal,
 * marked there first): their datafiles are not synced per write but checkpointed, and an
 * open redoes from the log what they lost. Every other collection (users, sessions,
 * scripts, and any added later) is synced by each write before it is answered.
 */
const REDO_LOGGED: ReadonlySet<CollectionName> = new Set<CollectionName>(["cards", "trees"]);

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

  const fileOf = (name: CollectionName) => path.join(dataDir, `${name}.db`);
  const compactors = new Map<CollectionName, DatafileCompactor>();
  const datafiles = new Map<CollectionName, Datafile>();
  const checkpointUses = new Map<CollectionName, CheckpointUse>();
  let changeLog: ChangeLog;
  try {
    changeLog = await ChangeLog.open(dataDir, log, { fs, sync, faults: options.faults });
  } catch (err) {
    await unlock();
    throw err;
  }

  /**
   * A collection's appends: the lines go to its datafile (synced unless the change log
   * redoes it); a failed one is cut off again, or, when even that fails, the store fails.
   */
  const persistFor =
    (name: CollectionName): Persist =>
    async (text, lines) => {
      if (failure) throw failure;
      const datafile = datafiles.get(name)!;
      const before = datafile.size;
      const fault = options.faults?.take(name) ?? null;
      try {
        if (fault) await failLikeFullDisk((half) => datafile.append(half), datafile.file, text);
        await datafile.append(text);
        compactors.get(name)!.appendedLines += lines;
        if (!REDO_LOGGED.has(name) && sync === "on") await datafile.datasync();
      } catch (err) {
        try {
          if (fault?.stuck) failedUndo();
          await datafile.truncate(before);
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

  /** Opens a datafile (repairing what a crash left), and parses it into its records. */
  const load = async (name: CollectionName): Promise<Doc[] & { superseded: number }> => {
    const file = fileOf(name);
    const checkpoint = REDO_LOGGED.has(name) ? changeLog.checkpoints.get(`${name}.db`) : undefined;
    const opened = await Datafile.open(fs, file, log, checkpoint);
    datafiles.set(name, opened.datafile);
    checkpointUses.set(name, opened.checkpointUse);
    const parsed = parseDatafile(opened.text);
    if (parsed.lines > 0 && parsed.corrupt / parsed.lines > CORRUPT_ALERT_THRESHOLD) {
      throw new Error(
        `${Math.floor((100 * parsed.corrupt) / parsed.lines)}% of ${path.basename(file)} is corrupt, more than 10%: refusing to open the store rather than lose data.`,
      );
    }
    return Object.assign(parsed.docs, { superseded: parsed.lines - parsed.docs.length });
  };

  const compactorFor = (name: CollectionName, subject: Collection | CardCollection) => {
    const compactor = new DatafileCompactor(
      { hold: (work) => subject.gate.write(work), liveRecords: () => subject.live },
      datafiles.get(name)!,
      options.compaction?.sliceMs,
    );
    compactors.set(name, compactor);
    return compactor;
  };

  let users!: Collection;
  let trees!: Collection;
  let cards!: CardCollection;
  let sessions!: Collection;
  let scripts!: Collection;
  let idempotency: Awaited<ReturnType<typeof openIdempotencyFile>> | null = null;

  /**
   * Checkpoints a redo-logged datafile: measures it (size, epoch, and the change every
   * earlier one is finished at) with its writes held, syncs it, then logs the checkpoint.
   */
  const checkpoint = (name: CollectionName): Promise<void> => {
    const datafile = datafiles.get(name)!;
    const gate = name === "cards" ? cards.gate : trees.gate;
    return datafile.exclusive(async () => {
      const at = await gate.write(async () => ({
        size: datafile.size,
        epoch: datafile.epoch,
        seq: changeLog.finishedThrough(),
        // Lines past `size` may belong to changes whose log lines never reached the disk (commitEarly).
        cut: true,
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
    const one = async (name: Exclude<CollectionName, "cards">): Promise<Collection> => {
      const docs = await load(name);
      const collection = new Collection(name, datafiles.get(name)!, persistFor(name));
      await collection.fill(docs, INDEXES[name]);
      compactorFor(name, collection).appendedLines = docs.superseded;
      return collection;
    };
    users = await one("users");
    trees = await one("trees");
    const cardDocs = await load("cards");
    cards = new CardCollection(datafiles.get("cards")!, persistFor("cards"));
    cards.fill(cardDocs);
    compactorFor("cards", cards).appendedLines = cardDocs.superseded;
    sessions = await one("sessions");
    scripts = await one("scripts");
    for (const name of REDO_LOGGED) {
      const compactor = compactors.get(name)!;
      // Every change with a line in the new file is on disk in the log before the file is renamed in.
      compactor.beforeSwap = () => changeLog.flush();
      // A compaction swapped a new file in: its checkpoint, logged with writes still held, is the new epoch's.
      compactor.afterSwap = async () => {
        const datafile = datafiles.get(name)!;
        await changeLog.checkpoint(`${name}.db`, {
          size: datafile.size,
          epoch: datafile.epoch,
          seq: changeLog.finishedThrough(),
          cut: true,
        });
      };
    }
    changeLog.beforeCompaction = checkpointAll;
    // Idempotency keys keep their own file (idempotency-file.ts), through the same port.
    idempotency = await openIdempotencyFile(path.join(dataDir, "idempotency.log"), log, { fs, sync });
    // After the load, which creates missing datafiles.
    await fs.makePrivate(dataDir);

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
    idempotency.adopt(claimsLeftByACrash(changeLog));
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

  /**
   * Logs and applies a change, and resolves once it is applied (this process's later reads
   * and writes see it) with `durable`, which resolves once its log line is on stable
   * storage. The change's lines may reach the datafiles before that: checkpoints therefore
   * always say `cut` (an open cuts a datafile back to its checkpoint and redoes the rest
   * from the log), and a compaction flushes the log before its new file is renamed in.
   * A failed flush fails the store, and `durable` rejects, for this change and for every
   * later one (whose flush would have covered it), so none of them is answered.
   */
  const commitEarly = async (change: Change, tree: Tree, key?: ChangeKey): Promise<{ durable: Promise<void> }> => {
    if (failure) throw failure;
    if (changeLog.latestRevision(change.treeId) >= change.revision) {
      throw new ConflictError("The tree changed meanwhile; try again.");
    }
    let logged: { entry: LogEntry; durable: Promise<void> };
    try {
      logged = await changeLog.appendEarly(change, tree, key);
    } catch (err) {
      if (err instanceof ChangeLogUndoError) fail("a failed append to the change log could not be undone", { error: String(err) });
      else log("a write failed and was undone", { collection: "changes", error: String(err) });
      throw err;
    }
    const { entry } = logged;
    const durable = logged.durable.catch((err: unknown) => {
      if (!failure) fail("the change log could not be synced", { error: String(err) });
      throw err;
    });
    loggedSinceCheckpoint += entry.length;
    let cardsApplied = false;
    try {
      await cards.put(change.after);
      cardsApplied = true;
      await trees.put([tree]);
    } catch (err) {
      // Whoever awaits nothing of it now: the failure below is what the caller hears.
      durable.catch(() => undefined);
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
    return { durable };
  };

  const read = <T>(work: () => Promise<T>): Promise<T> => {
    if (failure) return Promise.reject(failure);
    return work();
  };
  const live = { trashed: { $exists: false } };

  return {
    status: () => status,
    // Every write to this data directory passes through this process (its lock), and a
    // collection drops what it keeps when a write to it begins: what it answers here is what
    // the read would answer now.
    instant: {
      userByEmail: (email) => (failure ? undefined : (users.instantOne("email", email) as StoredUser | undefined)),
      treeById: (id) => (failure ? undefined : (trees.instantOne("_id", id) as Tree | undefined)),
      sessionWithUser: (id) => {
        if (failure) return undefined;
        const session = sessions.instantOne("_id", id) as Session | undefined;
        const user = session && (users.instantOne("_id", session.userId) as StoredUser | undefined);
        return user ? { session: session!, user } : undefined;
      },
    },
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
        await users.put([user], [], true);
      },
      byId: (id) => read(async () => withoutNedbFields<StoredUser>(await users.readOne("_id", id))),
      byIds: (ids) => read(async () => (await users.read((db) => db.find({ _id: { $in: [...ids] } }))) as unknown as StoredUser[]),
      byEmail: (email) => read(async () => withoutNedbFields<StoredUser>(await users.readOne("email", email))),
      list: () => read(async () => (await users.read((db) => db.find({}).sort({ createdAt: 1 }))) as unknown as StoredUser[]),
      update: (id, fields) =>
        read(() =>
          users.write(async (put, db) => {
            const old = await db.findOne({ _id: id });
            if (!old) return null;
            const next = { ...old, ...fields, _id: id };
            await put([next]);
            return withoutNedbFields<StoredUser>(next);
          }),
        ),
    },
    trees: {
      byId: (id) => read(async () => withoutNedbFields<Tree>(await trees.readOne("_id", id))),
      byPublicUrl: (publicUrl) => read(async () => withoutNedbFields<Tree>(await trees.read((db) => db.findOne({ publicUrl })))),
      forUser: (userId) => read(async () => (await trees.read((db) => db.find({ users: userId }))) as unknown as Tree[]),
      removeWithCards: async (id, keyed) => {
        // The tree first: a crash in between leaves cards of no tree, which nobody can
        // reach and the next open sweeps, never a tree with part of its cards.
        // Marked in the log first, so that an open after a crash finishes the deletion
        // instead of applying the tree's changes again; a keyed deletion's key is in that line.
        if (failure) throw failure;
        try {
          await changeLog.treeRemoved(id, keyed);
        } catch (err) {
          if (err instanceof ChangeLogSyncError) fail("the change log could not be synced", { error: String(err) });
          throw err;
        }
        await trees.put([], [id]);
        await cards.removeTree(id);
      },
    },
    cards: {
      byId: (id) => read(async () => withoutNedbFields<StoredCard>(await cards.byId(id))),
      trashedByTree: (treeId) => read(async () => (await cards.ofTree(treeId, { trashed: { $exists: true } })) as unknown as StoredCard[]),
      liveById: (id) => read(async () => withoutNedbFields<StoredCard>(await cards.byId(id, live))),
      liveByTree: (treeId) => read(async () => (await cards.ofTree(treeId, live)) as unknown as StoredCard[]),
      countLiveByTrees: (treeIds) => read(() => cards.countLive(treeIds)),
    },
    changes: {
      commit: async (change, tree, key) => {
        await (await commitEarly(change, tree, key)).durable;
      },
      commitEarly: (change, tree, key) => commitEarly(change, tree, key),
      byKey: async (userId, key, since) => {
        if (failure) throw failure;
        const entries = changeLog.keyed({ userId, key, since });
        const done: KeyedChange[] = (await changeLog.read(entries)).map(({ change }, i) => ({ step: entries[i].key!.step, change }));
        for (const { treeId, removal } of changeLog.keyedRemovals({ userId, key, since })) done.push({ step: removal.key.step, removedTreeId: treeId });
        // Stable: a step's changes stay in the order they were logged.
        return done.sort((a, b) => a.step - b.step);
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
        await sessions.put([session], [], true);
      },
      byId: (id) => read(async () => withoutNedbFields<Session>(await sessions.read((db) => db.findOne({ _id: id })))),
      // Both records kept for `instant.sessionWithUser`.
      withUser: (id) =>
        read(async () => {
          const session = withoutNedbFields<Session>(await sessions.readOne("_id", id));
          if (!session) return null;
          return { session, user: withoutNedbFields<StoredUser>(await users.readOne("_id", session.userId)) };
        }),
      remove: async (id) => {
        await sessions.put([], [id]);
      },
      removeForUser: (userId, exceptId) => removeWhere(sessions, exceptId ? { userId, _id: { $ne: exceptId } } : { userId }),
      removeExpired: (now) => removeWhere(sessions, { expiresAt: { $lt: now } }),
    },
    scripts: {
      insert: async (script) => {
        await scripts.put([script], [], true);
      },
      byId: (id) => read(async () => withoutNedbFields<StoredScript>(await scripts.read((db) => db.findOne({ _id: id })))),
      forUser: (userId) => read(async () => (await scripts.read((db) => db.find({ userId }).sort({ createdAt: 1, _id: 1 }))) as unknown as StoredScript[]),
      replace: (script) =>
        read(() =>
          scripts.write(async (put, db) => {
            if (await db.findOne({ _id: script._id })) await put([script]);
          }),
        ),
      remove: async (id) => {
        await scripts.put([], [id]);
      },
    },
    checkpointNow: () => checkpointAll(),
    idempotency: {
      ...opened,
      // Keyed deletions are kept in the change log as long as their keys live.
      sweep: (now, most) => {
        changeLog.forgetRemovalKeys(now);
        return opened.sweep(now, most);
      },
    },
    close: async () => {
      if (status === "closed") return;
      if (checkpointTimer) clearInterval(checkpointTimer);
      await stopCompaction();
      await checkpointing?.catch(() => undefined);
      // Each compaction holds its collection's writes for the swap, after every pending
      // one; it leaves one line per record for a fast next start (and checkpoints cards
      // and trees). A failed store is left as it is.
      if (!failure) for (const compactor of compactors.values()) await compactor.compact();
      await changeLog.close();
      const figures = changeLog.flushFigures;
      if (figures.flushes > 0) {
        options.info?.("group commit: change log flushes", { ...figures, flushMs: Math.round(figures.flushMs), sync });
      }
      for (const datafile of datafiles.values()) await datafile.close();
      await opened.close();
      status = "closed";
      await fs.makePrivate(dataDir).catch((err) => log("could not make the data files private", { error: String(err) }));
      await unlock();
    },
  };
}

/** Removes the records `query` matches, in one write. */
async function removeWhere(collection: Collection, query: Doc): Promise<void> {
  await collection.write(async (put, db) => {
    const found = await db.find(query, { _id: 1 });
    await put([], found.map((doc) => doc._id as string));
  });
}

/** Puts a change's cards back as they were before it: the touched ones restored, the created ones removed, in one write. */
async function revertCards(cards: CardCollection, change: Change): Promise<void> {
  const known = new Set(change.before.map((card) => card._id));
  const created = change.after.filter((card) => !known.has(card._id)).map((card) => card._id);
  await cards.put(change.before, created);
}

/**
 * At open: finishes the deletion of trees the log says were deleted, and applies again
 * every logged change past the revision its tree's record holds (a crash between the log
 * and the datafiles). Changes carry whole records, so this is safe to repeat.
 */
async function recoverFromChangeLog(changeLog: ChangeLog, trees: Collection, cards: CardCollection, log: RepairLog): Promise<void> {
  const stored = new Map((await trees.db.find({})).map((t) => [t._id as string, t]));
  const deleted = [...changeLog.removedTrees].filter((id) => stored.has(id));
  if (deleted.length > 0) {
    await trees.put([], deleted);
    log("finished deleting trees a crash interrupted", { trees: deleted.length });
  }
  let replayed = 0;
  for (const treeId of changeLog.treeIds()) {
    const revision = (stored.get(treeId)?.revision as number | undefined) ?? 0;
    const missing = changeLog.entries(treeId).filter((entry) => entry.revision > revision);
    for (const { change, tree } of await changeLog.read(missing)) {
      await cards.put(change.after);
      await trees.put([tree]);
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
async function redoFromCheckpoint(changeLog: ChangeLog, trees: Collection, cards: CardCollection, from: number, log: RepairLog): Promise<void> {
  const storedRevision = new Map((await trees.db.find({})).map((t) => [t._id as string, (t.revision as number | undefined) ?? 0]));
  const deleted = [...changeLog.removedTrees].filter((id) => storedRevision.has(id));
  if (deleted.length > 0) {
    await trees.put([], deleted);
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
      await cards.put(change.after);
      await trees.put([tree]);
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

/** Cards whose tree does not exist: left by a crash while a tree was created or deleted. */
async function sweepCardsWithoutTree(trees: Collection, cards: CardCollection, log: RepairLog): Promise<void> {
  const treeIds = new Set((await trees.db.find({}, { _id: 1 })).map((t) => t._id as string));
  let swept = 0;
  for (const treeId of cards.treeIds()) if (!treeIds.has(treeId)) swept += await cards.removeTree(treeId);
  if (swept > 0) log("removed cards of trees that do not exist (an interrupted tree creation or deletion)", { cards: swept });
}

/**
 * The claims a crash left: keys whose request committed a change (its line carries the key)
 * or deleted a tree (its deletion's line does) and died before its answer was kept, as
 * claims whose lease has ended, so the next request with the key takes it over and answers
 * from the change or the deletion (domain/idempotency.ts). A claim starts at the earliest
 * of them, so the take-over finds them all. The idempotency file adopts only keys it holds
 * no answer for; those older than a key lives are left out.
 */
function claimsLeftByACrash(changeLog: ChangeLog): IdempotencyRecord[] {
  const now = new Date().toISOString();
  const oldest = new Date(Date.parse(now) - KEEP_MS).toISOString();
  const claims = new Map<string, IdempotencyRecord>();
  const left = (key: ChangeKey, at: string, expiresAt: string, claim: string) => {
    const id = `${key.userId} ${key.key}`;
    const there = claims.get(id);
    if (there && there.createdAt <= at) return;
    claims.set(id, { userId: key.userId, key: key.key, fingerprint: key.fingerprint, claim, leaseUntil: new Date(0).toISOString(), createdAt: at, expiresAt });
  };
  for (const entry of changeLog.keyed()) {
    if (entry.at >= oldest) left(entry.key!, entry.at, new Date(Date.parse(entry.at) + KEEP_MS).toISOString(), `died after change ${entry.seq}`);
  }
  for (const { treeId, removal } of changeLog.keyedRemovals()) {
    if (removal.expiresAt >= now) left(removal.key, removal.at, removal.expiresAt, `died after deleting tree ${treeId}`);
  }
  return [...claims.values()];
}
