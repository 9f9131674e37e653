/**
 * The embedded store: NeDB (through nedb-promises), one datafile per collection under the
 * data directory. NeDB answers a write only after appending it to the datafile, which is
 * what makes a 201 durable. Query objects stay inside this file.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import Datastore from "nedb-promises";
import type { StoredCard, StoredUser, Tree } from "../domain/records.js";
import { lockDataDir } from "./data-dir-lock.js";
import type { Session, Store } from "./store.js";

/** How often NeDB rewrites each datafile to drop superseded lines. */
const COMPACTION_INTERVAL_MS = 10 * 60 * 1000;

type Doc = Record<string, unknown>;

/** Methods of @seald-io/nedb that nedb-promises does not wrap. */
interface Compaction {
  setAutocompactionInterval(intervalMs: number): void;
  stopAutocompaction(): void;
  compactDatafileAsync(): Promise<void>;
}
// Called on the wrapped datastore itself: through nedb-promises' proxy, these methods'
// own property writes are refused.
const compaction = (db: Datastore<Doc>) => (db as unknown as { __original: Compaction }).__original;

function withoutNedbFields<T>(doc: Doc | null): T | null {
  return (doc as T | null) ?? null;
}

export async function openNedbStore(dataDir: string): Promise<Store> {
  await mkdir(dataDir, { recursive: true });
  const unlock = lockDataDir(dataDir);
  const open = (name: string) =>
    Datastore.create({ filename: path.join(dataDir, `${name}.db`), autoload: false }) as Datastore<Doc>;
  const users = open("users");
  const trees = open("trees");
  const cards = open("cards");
  const sessions = open("sessions");
  const all = [users, trees, cards, sessions];
  await Promise.all(all.map((db) => db.load()));

  await users.ensureIndex({ fieldName: "email", unique: true });
  await trees.ensureIndex({ fieldName: "users" });
  await trees.ensureIndex({ fieldName: "publicUrl", unique: true, sparse: true });
  await cards.ensureIndex({ fieldName: "treeId" });
  await cards.ensureIndex({ fieldName: "parentId" });
  await sessions.ensureIndex({ fieldName: "userId" });
  for (const db of all) compaction(db).setAutocompactionInterval(COMPACTION_INTERVAL_MS);

  const reads = { count: 0 };
  const read = <T>(promise: Promise<T>): Promise<T> => {
    reads.count++;
    return promise;
  };

  return {
    reads,
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
        // Cards first: a crash between the two leaves a tree with no cards, never cards
        // that belong to no tree.
        await cards.remove({ treeId: id }, { multi: true });
        await trees.remove({ _id: id }, {});
      },
    },
    cards: {
      insertMany: async (list) => {
        if (list.length === 0) return;
        // NeDB inserts an array as one unit: in memory all or nothing, on disk one append.
        await cards.insert([...list] as StoredCard[]);
      },
      liveById: async (id) =>
        withoutNedbFields<StoredCard>(await read(cards.findOne({ _id: id, trashed: { $exists: false } }))),
      liveByTree: async (treeId) =>
        (await read(cards.find({ treeId, trashed: { $exists: false } }))) as unknown as StoredCard[],
      countLiveByTrees: async (treeIds) =>
        treeIds.length === 0
          ? 0
          : await read(cards.count({ treeId: { $in: [...treeIds] }, trashed: { $exists: false } })),
      replace: async (card) => {
        await cards.update({ _id: card._id }, card);
      },
      trash: async (ids, at) => {
        if (ids.length === 0) return;
        await cards.update({ _id: { $in: [...ids] } }, { $set: { trashed: at } }, { multi: true });
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
      for (const db of all) compaction(db).stopAutocompaction();
      // Compaction runs after every queued write, so this also flushes; it leaves one line
      // per record for a fast next start.
      await Promise.all(all.map((db) => compaction(db).compactDatafileAsync()));
      unlock();
    },
  };
}
