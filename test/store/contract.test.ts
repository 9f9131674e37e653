/**
 * The Store port's contract (src/domain/ports/store.ts), run against the stores of the
 * test project: NeDB in a temporary data directory and the in-memory store, or PostgreSQL
 * in a fresh database (`CARDTREE_TEST_STORE=postgres`). Whatever the domain relies on is asserted here once,
 * so a second engine cannot drift from the first without a failing test.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type { IdempotencyRecord, Store } from "../../src/domain/ports/store.js";
import { newRecordId, newUserId } from "../../src/shared/ids.js";
import type { Change } from "../../src/shared/changes.js";
import type { StoredCard, StoredScript, StoredUser, Tree } from "../../src/shared/records.js";
import { openMemoryStore } from "../../src/store/memory-store.js";
import { openNedbStore } from "../../src/store/nedb-store.js";
import { openPostgresStore } from "../../src/store/postgres-store.js";
import { createTestDatabase, dropTestDatabase, TEST_STORE } from "../helpers/postgres.js";

let store: Store;
let cleanUp: () => Promise<void>;

/**
 * A fresh, empty store for each test: a new data directory for NeDB; for PostgreSQL one
 * database for the file, emptied before each test (making a database per test would cost
 * more than the tests), and opened anew so every test starts from `openPostgresStore`.
 */
let database: string | undefined;

/** The engines of this project: PostgreSQL in the postgres one; NeDB and the in-memory store otherwise. */
const ENGINES = TEST_STORE === "postgres" ? (["postgres"] as const) : (["nedb", "memory"] as const);
type Engine = (typeof ENGINES)[number];

async function openTestStore(engine: Engine): Promise<{ store: Store; cleanUp: () => Promise<void> }> {
  if (engine === "memory") return { store: openMemoryStore(), cleanUp: async () => undefined };
  if (engine === "postgres") {
    database ??= await createTestDatabase();
    const opened = await openPostgresStore(database, { log: () => undefined });
    await opened.pool.query("TRUNCATE users, trees, cards, sessions, changes, scripts, idempotency_keys, tree_removals");
    return { store: opened, cleanUp: async () => undefined };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), "cardtree-contract-"));
  const opened = await openNedbStore(dir, { log: () => undefined });
  return { store: opened, cleanUp: () => rm(dir, { recursive: true, force: true }) };
}

afterAll(async () => {
  if (database) await dropTestDatabase(database);
});

let clock = Date.parse("2026-01-01T00:00:00.000Z");
const time = () => new Date((clock += 1000)).toISOString();

function buildUser(fields: Partial<StoredUser> = {}): StoredUser {
  const _id = newUserId();
  return {
    _id,
    email: `${_id}@example.com`,
    passwordHash: "scrypt$x",
    limit: -1,
    favoriteTrees: [],
    randomIndex: 7,
    userHash: "abcd",
    createdAt: time(),
    ...fields,
  };
}

function buildTree(owner: string, fields: Partial<Tree> = {}): Tree {
  const at = time();
  return { __v: 0, _id: newRecordId(), createdAt: at, updatedAt: at, name: "A tree", owner, users: [owner], ...fields };
}

function buildCard(treeId: string, fields: Partial<StoredCard> = {}): StoredCard {
  const at = time();
  return { _id: newRecordId(), treeId, parentId: null, content: "", position: 0, createdAt: at, updatedAt: at, ...fields };
}

/**
 * Cards sorted by id, as they were written. The embedded store hands back the batch mark it
 * frames a multi-card write with (`batch`, a private field no presenter shows); it is not
 * part of the record the domain wrote, so it is left out of the comparison.
 */
const byId = <T extends { _id: string }>(list: T[]) =>
  [...list].map(asWritten).sort((a, b) => a._id.localeCompare(b._id));

function asWritten<T>(record: T): T {
  if (record === null || typeof record !== "object" || !("batch" in record)) return record;
  const { batch: _mark, ...rest } = record as T & { batch: unknown };
  return rest as T;
}

/**
 * Trees and cards are written only through the change log (`changes.commit`), as the
 * domain writes them: these make the changes a test needs.
 */
async function commitTree(tree: Tree, cards: StoredCard[] = []): Promise<Tree> {
  const created = { ...tree, revision: 1 };
  await store.changes.commit(
    { treeId: tree._id, revision: 1, at: tree.createdAt, userId: tree.owner, kind: "tree.create", before: [], after: cards, tree: { before: null, after: created } },
    created,
  );
  return created;
}

/** Commits the tree's next change: `next` as the tree record (its revision moved) and the cards. */
async function commitNext(current: Tree, next: Tree, before: StoredCard[] = [], after: StoredCard[] = []): Promise<Tree> {
  const revision = (current.revision ?? 0) + 1;
  const at = time();
  const stored = { ...next, revision, updatedAt: at };
  const kind = after.length > 0 ? "card.update" : "tree.update";
  await store.changes.commit({ treeId: current._id, revision, at, userId: current.owner, kind, before, after, tree: { before: current, after: stored } }, stored);
  return stored;
}

describe.each(ENGINES)("the Store contract (%s)", (engine) => {
  beforeEach(async () => {
    ({ store, cleanUp } = await openTestStore(engine));
  });

  afterEach(async () => {
    await store.close();
    await cleanUp();
  });

  describe("users", () => {
    it("finds a user by id, by ids and by email, as it was inserted", async () => {
      const ann = buildUser({ favoriteTrees: ["t1"] });
      const bob = buildUser();
      await store.users.insert(ann);
      await store.users.insert(bob);
      expect(await store.users.byId(ann._id)).toEqual(ann);
      expect(await store.users.byEmail(bob.email)).toEqual(bob);
      expect(byId(await store.users.byIds([ann._id, bob._id, newUserId()]))).toEqual(byId([ann, bob]));
      expect(await store.users.byIds([])).toEqual([]);
      expect(await store.users.byId(newUserId())).toBeNull();
      expect(await store.users.byEmail("nobody@example.com")).toBeNull();
    });

    it("lists users oldest first", async () => {
      const first = buildUser();
      const second = buildUser();
      await store.users.insert(second);
      await store.users.insert(first);
      expect((await store.users.list()).map((u) => u._id)).toEqual([first._id, second._id]);
    });

    it("refuses a second user with a taken email and keeps the first", async () => {
      const ann = buildUser({ email: "ann@example.com" });
      await store.users.insert(ann);
      await expect(store.users.insert(buildUser({ email: "ann@example.com" }))).rejects.toThrow();
      expect(await store.users.list()).toEqual([ann]);
    });

    it("updates the given fields and resolves to the whole user, or null when there is none", async () => {
      const ann = buildUser();
      await store.users.insert(ann);
      const updated = await store.users.update(ann._id, { limit: 5, favoriteTrees: ["a", "b"] });
      expect(updated).toEqual({ ...ann, limit: 5, favoriteTrees: ["a", "b"] });
      expect(await store.users.byId(ann._id)).toEqual(updated);
      expect(await store.users.update(newUserId(), { limit: 1 })).toBeNull();
    });

    it("finds a user by a changed email, and not by the old one", async () => {
      const ann = buildUser();
      await store.users.insert(ann);
      await store.users.update(ann._id, { email: "new@example.com" });
      expect((await store.users.byEmail("new@example.com"))?._id).toBe(ann._id);
      expect(await store.users.byEmail(ann.email)).toBeNull();
    });
  });

  describe("trees", () => {
    it("finds a tree by id, by publicUrl and by any of its users", async () => {
      const owner = newUserId();
      const guest = newUserId();
      const tree = await commitTree(buildTree(owner, { users: [owner, guest], publicUrl: "my-tree", latex: true }));
      const other = await commitTree(buildTree(guest));
      expect(await store.trees.byId(tree._id)).toEqual(tree);
      expect(await store.trees.byPublicUrl("my-tree")).toEqual(tree);
      expect(await store.trees.byPublicUrl("nothing-here")).toBeNull();
      expect(await store.trees.forUser(owner)).toEqual([tree]);
      expect(byId(await store.trees.forUser(guest))).toEqual(byId([tree, other]));
      expect(await store.trees.forUser(newUserId())).toEqual([]);
    });

    it("keeps optional fields absent, not null", async () => {
      const tree = await commitTree(buildTree(newUserId()));
      const found = await store.trees.byId(tree._id);
      expect(found).not.toHaveProperty("publicUrl");
      expect(found).not.toHaveProperty("latex");
    });

    it("replaces a tree: its new users and publicUrl are what it is found by", async () => {
      const owner = newUserId();
      const guest = newUserId();
      const tree = await commitTree(buildTree(owner, { publicUrl: "old-name" }));
      const { publicUrl: _gone, ...rest } = tree;
      const next = await commitNext(tree, { ...rest, __v: 1, name: "Renamed", users: [owner, guest] });
      expect(await store.trees.byId(tree._id)).toEqual(next);
      expect(await store.trees.byPublicUrl("old-name")).toBeNull();
      expect(await store.trees.forUser(guest)).toEqual([next]);
    });

    it("refuses a publicUrl another tree holds, and writes nothing of that change", async () => {
      const owner = newUserId();
      await commitTree(buildTree(owner, { publicUrl: "taken" }));
      const clash = buildTree(owner, { publicUrl: "taken" });
      await expect(commitTree(clash)).rejects.toThrow();
      expect(await store.trees.byId(clash._id)).toBeNull();
      const second = await commitTree(buildTree(owner));
      await expect(commitNext(second, { ...second, publicUrl: "taken" })).rejects.toThrow();
      expect(await store.trees.byId(second._id)).toEqual(second);
      expect(await store.changes.since(second._id, 0, 10)).toHaveLength(1);
    });

    it("removes a tree with every card of it, trashed or not, and nothing of other trees", async () => {
      const owner = newUserId();
      const treeRecord = buildTree(owner);
      const cards = [buildCard(treeRecord._id, { __v: 0 }), buildCard(treeRecord._id, { __v: 0 })];
      const tree = await commitTree(treeRecord, cards);
      const keptRecord = buildTree(owner);
      const other = buildCard(keptRecord._id, { __v: 0 });
      const kept = await commitTree(keptRecord, [other]);
      await commitNext(tree, tree, [cards[0]], [{ ...cards[0], trashed: time(), __v: 1 }]);
      await store.trees.removeWithCards(tree._id);
      expect(await store.trees.byId(tree._id)).toBeNull();
      expect(await store.cards.liveByTree(tree._id)).toEqual([]);
      expect(await store.cards.liveById(cards[1]._id)).toBeNull();
      expect(await store.cards.byId(cards[0]._id)).toBeNull();
      expect(await store.changes.since(tree._id, 0, 10)).toEqual([]);
      expect((await store.cards.liveByTree(kept._id)).map(asWritten)).toEqual([other]);
    });
  });

  describe("cards", () => {
    it("reads a tree's live cards as they were written: any text, any finite position", async () => {
      const tree = buildTree(newUserId());
      const texts = ["", "plain", "nul \u0000 inside", "lone \ud800 surrogate", "😀 emoji", '"quotes" and \\ backslash'];
      const positions = [0, -1, 1.5, 0.1 + 0.2, 1e-7, Number.MAX_SAFE_INTEGER];
      const cards = texts.map((content, i) => buildCard(tree._id, { content, position: positions[i], __v: 0 }));
      await commitTree(tree, cards);
      expect(byId(await store.cards.liveByTree(tree._id))).toEqual(byId(cards));
      for (const card of cards) expect(asWritten(await store.cards.liveById(card._id))).toEqual(card);
    });

    it("writes all the cards of a change or none", async () => {
      const owner = newUserId();
      await commitTree(buildTree(owner, { publicUrl: "taken" }));
      // The tree record of this change cannot be written (its publicUrl is taken): none of its cards are.
      const tree = buildTree(owner, { publicUrl: "taken" });
      const batch = [buildCard(tree._id, { __v: 0 }), buildCard(tree._id, { __v: 0 }), buildCard(tree._id, { __v: 0 })];
      await expect(commitTree(tree, batch)).rejects.toThrow();
      expect(await store.cards.liveByTree(tree._id)).toEqual([]);
      for (const card of batch) expect(await store.cards.byId(card._id)).toBeNull();
      expect(await store.changes.since(tree._id, 0, 10)).toEqual([]);
    });

    it("keeps trashed cards out of every read and count", async () => {
      const record = buildTree(newUserId());
      const cards = [buildCard(record._id, { __v: 0 }), buildCard(record._id, { __v: 0 }), buildCard(record._id, { __v: 0 })];
      const tree = await commitTree(record, cards);
      const at = time();
      await commitNext(tree, tree, cards.slice(0, 2), cards.slice(0, 2).map((card) => ({ ...card, trashed: at, __v: 1 })));
      expect((await store.cards.liveByTree(tree._id)).map(asWritten)).toEqual([cards[2]]);
      expect(await store.cards.liveById(cards[0]._id)).toBeNull();
      expect(await store.cards.countLiveByTrees([tree._id])).toBe(1);
    });

    it("counts the live cards of several trees", async () => {
      const [a, b, c] = [buildTree(newUserId()), buildTree(newUserId()), buildTree(newUserId())];
      await commitTree(a, [buildCard(a._id, { __v: 0 }), buildCard(a._id, { __v: 0 })]);
      await commitTree(b, [buildCard(b._id, { __v: 0 })]);
      await commitTree(c, [buildCard(c._id, { __v: 0 })]);
      expect(await store.cards.countLiveByTrees([a._id, b._id])).toBe(3);
      expect(await store.cards.countLiveByTrees([])).toBe(0);
      expect(await store.cards.countLiveByTrees([newRecordId()])).toBe(0);
    });

    it("replaces a card with a new version of it", async () => {
      const record = buildTree(newUserId());
      const parent = buildCard(record._id, { __v: 0 });
      const card = buildCard(record._id, { __v: 0 });
      const tree = await commitTree(record, [parent, card]);
      const next = { ...card, content: "edited", parentId: parent._id, position: 2.5, updatedAt: time(), __v: 1 };
      await commitNext(tree, tree, [card], [next]);
      expect(asWritten(await store.cards.liveById(card._id))).toEqual(next);
      expect(byId(await store.cards.liveByTree(tree._id))).toEqual(byId([parent, next]));
    });
  });

  describe("changes", () => {
    /** A tree made through the log (revision 1), as the domain makes one. */
    async function createTree(cards: StoredCard[] = []): Promise<{ tree: Tree; change: Change }> {
      const tree = { ...buildTree(newUserId()), revision: 1 };
      const change: Change = { treeId: tree._id, revision: 1, at: tree.createdAt, userId: tree.owner, kind: "tree.create", before: [], after: cards, tree: { before: null, after: tree } };
      await store.changes.commit(change, tree);
      return { tree, change };
    }

    /** The next change of `tree`: its revision + 1, the cards as they were and as they are. */
    function nextChange(tree: Tree, kind: Change["kind"], before: StoredCard[], after: StoredCard[]) {
      const revision = (tree.revision ?? 0) + 1;
      const at = time();
      const change: Change = { treeId: tree._id, revision, at, userId: tree.owner, kind, before, after };
      return { change, tree: { ...tree, revision, updatedAt: at } };
    }

    it("commits a tree's creation: the tree, its cards and the change", async () => {
      const card = { ...buildCard("placeholder"), __v: 0 };
      const { tree, change } = await createTree([]);
      const first = { ...card, treeId: tree._id };
      const next = nextChange(tree, "card.create", [], [first]);
      await store.changes.commit(next.change, next.tree);
      expect(await store.trees.byId(tree._id)).toEqual(next.tree);
      expect(asWritten(await store.cards.liveById(first._id))).toEqual(first);
      expect(await store.changes.since(tree._id, 0, 10)).toEqual([change, next.change]);
    });

    it("replaces the touched cards and keeps a trashed one readable by id and among the trash", async () => {
      const { tree } = await createTree();
      const [a, b] = [buildCard(tree._id, { __v: 0 }), buildCard(tree._id, { __v: 0 })];
      const created = nextChange(tree, "import", [], [a, b]);
      await store.changes.commit(created.change, created.tree);
      const edited = { ...a, content: "edited", __v: 1 };
      const trashed = { ...b, trashed: time(), __v: 1 };
      const next = nextChange(created.tree, "card.delete", [a, b], [edited, trashed]);
      await store.changes.commit(next.change, next.tree);
      expect((await store.cards.liveByTree(tree._id)).map(asWritten)).toEqual([edited]);
      expect(asWritten(await store.cards.byId(b._id))).toEqual(trashed);
      expect(asWritten(await store.cards.byId(a._id))).toEqual(edited);
      expect(await store.cards.byId(newRecordId())).toBeNull();
      expect((await store.cards.trashedByTree(tree._id)).map(asWritten)).toEqual([trashed]);
    });

    it("refuses a revision the tree already has, and writes nothing of it", async () => {
      const { tree } = await createTree();
      const card = buildCard(tree._id, { __v: 0 });
      const first = nextChange(tree, "card.create", [], [card]);
      await store.changes.commit(first.change, first.tree);
      const rival = buildCard(tree._id, { __v: 0 });
      const second = nextChange(tree, "card.create", [], [rival]);
      // The port names ConflictError; the embedded store still throws NeDB's own unique-key
      // error here (its per-tree lock keeps the domain from ever reaching it), so the type
      // is asserted for PostgreSQL only, where two processes can race (test/postgres/).
      await expect(store.changes.commit(second.change, { ...second.tree, name: "rival" })).rejects.toThrow();
      expect(await store.cards.liveById(rival._id)).toBeNull();
      expect((await store.trees.byId(tree._id))?.name).toBe(tree.name);
      expect((await store.changes.since(tree._id, 0, 10)).map((c) => c.revision)).toEqual([1, 2]);
    });

    it("lists changes since a revision, oldest first, and history newest first, in pages", async () => {
      let { tree } = await createTree();
      const all: Change[] = [];
      for (let i = 0; i < 4; i++) {
        const next = nextChange(tree, "card.create", [], [buildCard(tree._id, { __v: 0 })]);
        await store.changes.commit(next.change, next.tree);
        all.push(next.change);
        tree = next.tree;
      }
      expect((await store.changes.since(tree._id, 2, 10)).map((c) => c.revision)).toEqual([3, 4, 5]);
      expect((await store.changes.since(tree._id, 1, 2)).map((c) => c.revision)).toEqual([2, 3]);
      expect((await store.changes.history(tree._id, { limit: 2 })).map((c) => c.revision)).toEqual([5, 4]);
      expect((await store.changes.history(tree._id, { before: 4, limit: 10 })).map((c) => c.revision)).toEqual([3, 2, 1]);
      expect(await store.changes.since(newRecordId(), 0, 10)).toEqual([]);
      expect(await store.changes.history(tree._id, { limit: 1 })).toEqual([all[3]]);
    });

    it("finds the changes that touched a card, newest first", async () => {
      const { tree } = await createTree();
      const card = buildCard(tree._id, { __v: 0 });
      const other = buildCard(tree._id, { __v: 0 });
      const made = nextChange(tree, "import", [], [card, other]);
      await store.changes.commit(made.change, made.tree);
      const edit = nextChange(made.tree, "card.update", [other], [{ ...other, content: "x", __v: 1 }]);
      await store.changes.commit(edit.change, edit.tree);
      const del = nextChange(edit.tree, "card.delete", [card], [{ ...card, trashed: time(), __v: 1 }]);
      await store.changes.commit(del.change, del.tree);
      expect((await store.changes.ofCard(tree._id, card._id, 10)).map((c) => c.revision)).toEqual([4, 2]);
      expect((await store.changes.ofCard(tree._id, card._id, 1)).map((c) => c.revision)).toEqual([4]);
      expect((await store.changes.ofCard(tree._id, other._id, 10)).map((c) => c.revision)).toEqual([3, 2]);
    });

    it("prunes changes older than a time, never a tree's latest", async () => {
      const { tree } = await createTree();
      const next = nextChange(tree, "card.create", [], [buildCard(tree._id, { __v: 0 })]);
      await store.changes.commit(next.change, next.tree);
      const lone = await createTree();
      expect(await store.changes.prune(time())).toBe(1);
      expect((await store.changes.since(tree._id, 0, 10)).map((c) => c.revision)).toEqual([2]);
      expect(await store.changes.since(lone.tree._id, 0, 10)).toEqual([lone.change]);
    });

    it("removes a tree's changes with the tree", async () => {
      const { tree } = await createTree([]);
      await store.trees.removeWithCards(tree._id);
      expect(await store.changes.since(tree._id, 0, 10)).toEqual([]);
      expect(await store.trees.byId(tree._id)).toBeNull();
    });
    it("keeps a keyed removal of a tree, found by its user's key beside the changes, until its key expires", async () => {
      const { tree } = await createTree();
      const userId = tree.owner;
      const first = nextChange(tree, "card.create", [], [buildCard(tree._id, { __v: 0 })]);
      const since = first.change.at;
      await store.changes.commit(first.change, first.tree, { userId, key: "k-del", fingerprint: "f", step: 0 });
      const at = time();
      const expiresAt = new Date(Date.parse(at) + 60_000).toISOString();
      const plain = await createTree();
      await store.trees.removeWithCards(tree._id, { key: { userId, key: "k-del", fingerprint: "f", step: 1 }, at, expiresAt });
      await store.trees.removeWithCards(plain.tree._id);

      expect(await store.trees.byId(tree._id)).toBeNull();
      expect(await store.cards.liveByTree(tree._id)).toEqual([]);
      // The tree's changes went with it; the removal is what the key found.
      expect(await store.changes.byKey(userId, "k-del", since)).toEqual([{ step: 1, removedTreeId: tree._id }]);
      expect(await store.changes.byKey(newUserId(), "k-del", since)).toEqual([]);
      expect(await store.changes.byKey(userId, "k-other", since)).toEqual([]);
      expect(await store.changes.byKey(userId, "k-del", time())).toEqual([]);

      await store.idempotency.sweep(new Date(Date.parse(expiresAt) - 1).toISOString(), { keys: 10, bytes: 1 << 20 });
      expect(await store.changes.byKey(userId, "k-del", since)).toEqual([{ step: 1, removedTreeId: tree._id }]);
      await store.idempotency.sweep(new Date(Date.parse(expiresAt) + 1).toISOString(), { keys: 10, bytes: 1 << 20 });
      expect(await store.changes.byKey(userId, "k-del", since)).toEqual([]);
    });

    it("finds the changes committed with a key, in step order, from a time on, and never shows the key with them", async () => {
      const { tree } = await createTree();
      const userId = tree.owner;
      const first = nextChange(tree, "card.create", [], [buildCard(tree._id, { __v: 0 })]);
      const since = first.change.at;
      await store.changes.commit(first.change, first.tree, { userId, key: "k-1", fingerprint: "f", step: 0 });
      const second = nextChange(first.tree, "card.create", [], [buildCard(tree._id, { __v: 0 })]);
      await store.changes.commit(second.change, second.tree, { userId, key: "k-1", fingerprint: "f", step: 1 });
      const other = nextChange(second.tree, "card.create", [], [buildCard(tree._id, { __v: 0 })]);
      await store.changes.commit(other.change, other.tree, { userId, key: "k-2", fingerprint: "g", step: 0 });
      const plain = nextChange(other.tree, "card.create", [], [buildCard(tree._id, { __v: 0 })]);
      await store.changes.commit(plain.change, plain.tree);

      expect(await store.changes.byKey(userId, "k-1", since)).toEqual([
        { step: 0, change: first.change },
        { step: 1, change: second.change },
      ]);
      expect(await store.changes.byKey(userId, "k-2", since)).toEqual([{ step: 0, change: other.change }]);
      // Another user's key of the same name, a key never used, a time after the changes.
      expect(await store.changes.byKey(newUserId(), "k-1", since)).toEqual([]);
      expect(await store.changes.byKey(userId, "k-3", since)).toEqual([]);
      expect(await store.changes.byKey(userId, "k-1", time())).toEqual([]);
      expect(await store.changes.since(tree._id, 1, 10)).toEqual([first.change, second.change, other.change, plain.change]);
      expect(await store.changes.history(tree._id, { limit: 4 })).toEqual([plain.change, other.change, second.change, first.change]);
    });
  });

  describe("sessions", () => {
    const buildSession = (userId: string, expiresAt: string) => ({
      _id: newRecordId(),
      userId,
      csrf: "token",
      createdAt: time(),
      expiresAt,
    });

    it("finds and removes one session", async () => {
      const session = buildSession(newUserId(), "2030-01-01T00:00:00.000Z");
      await store.sessions.insert(session);
      expect(await store.sessions.byId(session._id)).toEqual(session);
      await store.sessions.remove(session._id);
      expect(await store.sessions.byId(session._id)).toBeNull();
    });

    it("reads a session with its user, the user as it is now; none for a session that is not there, no user for an account that is not", async () => {
      const user = buildUser();
      await store.users.insert(user);
      const session = buildSession(user._id, "2030-01-01T00:00:00.000Z");
      await store.sessions.insert(session);
      expect(await store.sessions.withUser(session._id)).toEqual({ session, user });
      const updated = await store.users.update(user._id, { limit: 5 });
      expect(await store.sessions.withUser(session._id)).toEqual({ session, user: updated });
      const orphan = buildSession(newUserId(), "2030-01-01T00:00:00.000Z");
      await store.sessions.insert(orphan);
      expect(await store.sessions.withUser(orphan._id)).toEqual({ session: orphan, user: null });
      await store.sessions.remove(session._id);
      expect(await store.sessions.withUser(session._id)).toBeNull();
    });

    it("removes a user's sessions, but the one it is told to keep", async () => {
      const user = newUserId();
      const [kept, gone] = [buildSession(user, "2030-01-01T00:00:00.000Z"), buildSession(user, "2030-01-01T00:00:00.000Z")];
      const other = buildSession(newUserId(), "2030-01-01T00:00:00.000Z");
      for (const s of [kept, gone, other]) await store.sessions.insert(s);
      await store.sessions.removeForUser(user, kept._id);
      expect(await store.sessions.byId(kept._id)).toEqual(kept);
      expect(await store.sessions.byId(gone._id)).toBeNull();
      await store.sessions.removeForUser(user);
      expect(await store.sessions.byId(kept._id)).toBeNull();
      expect(await store.sessions.byId(other._id)).toEqual(other);
    });

    it("removes the sessions that expired before now", async () => {
      const user = newUserId();
      const old = buildSession(user, "2026-01-01T00:00:00.000Z");
      const fresh = buildSession(user, "2026-01-03T00:00:00.000Z");
      await store.sessions.insert(old);
      await store.sessions.insert(fresh);
      await store.sessions.removeExpired("2026-01-02T00:00:00.000Z");
      expect(await store.sessions.byId(old._id)).toBeNull();
      expect(await store.sessions.byId(fresh._id)).toEqual(fresh);
    });
  });

  describe("scripts", () => {
    const buildScript = (userId: string, createdAt: string, fields: Partial<StoredScript> = {}): StoredScript => ({
      _id: newRecordId(),
      userId,
      name: "a script",
      body: "window.loaded = true;",
      enabled: true,
      createdAt,
      updatedAt: createdAt,
      ...fields,
    });

    it("lists a user's scripts oldest first, ties by id, and no one else's", async () => {
      const user = newUserId();
      const at = "2026-01-02T00:00:00.000Z";
      const [second, tieB, tieA] = [
        buildScript(user, "2026-01-03T00:00:00.000Z"),
        buildScript(user, at, { _id: "b".repeat(24) }),
        buildScript(user, at, { _id: "a".repeat(24) }),
      ];
      const other = buildScript(newUserId(), "2026-01-01T00:00:00.000Z");
      for (const script of [second, tieB, tieA, other]) await store.scripts.insert(script);
      expect((await store.scripts.forUser(user)).map((s) => s._id)).toEqual([tieA._id, tieB._id, second._id]);
      expect(await store.scripts.byId(other._id)).toEqual(other);
    });

    it("replaces and removes a script; a second insert of one id is refused", async () => {
      const script = buildScript(newUserId(), "2026-01-02T00:00:00.000Z");
      await store.scripts.insert(script);
      await expect(store.scripts.insert({ ...script, name: "again" })).rejects.toThrow();
      const changed = { ...script, body: "window.changed = true;", enabled: false, updatedAt: "2026-01-04T00:00:00.000Z" };
      await store.scripts.replace(changed);
      expect(await store.scripts.byId(script._id)).toEqual(changed);
      await store.scripts.remove(script._id);
      expect(await store.scripts.byId(script._id)).toBeNull();
      expect(await store.scripts.forUser(script.userId)).toEqual([]);
    });
  });

  describe("idempotency keys", () => {
    const claimOf = (userId: string, key: string, fields: Partial<IdempotencyRecord> = {}): IdempotencyRecord => ({
      userId,
      key,
      fingerprint: "fp-1",
      claim: `claim-${key}-${fields.createdAt ?? "0"}`,
      leaseUntil: "2026-01-01T00:00:30.000Z",
      createdAt: "2026-01-01T00:00:00.000Z",
      expiresAt: "2026-01-02T00:00:00.000Z",
      ...fields,
    });
    const answer = (text: string, status = 201) => ({ status, headers: { "content-type": "application/json; charset=utf-8", "x-tree-revision": "3" }, body: Buffer.from(text) });

    it("claims a key once per user; the second claim sees the first, another user's claims its own", async () => {
      const ann = newUserId();
      const first = claimOf(ann, "k1");
      expect(await store.idempotency.claim(first)).toBeNull();
      expect(await store.idempotency.claim({ ...first, claim: "other", fingerprint: "fp-2" })).toEqual(first);
      expect(await store.idempotency.claim(claimOf(newUserId(), "k1"))).toBeNull();
    });

    it("claims a key once when many claims of it and of other keys arrive together; keeps each of their answers", async () => {
      const ann = newUserId();
      const contenders = Array.from({ length: 5 }, (_, i) => claimOf(ann, "same", { claim: `contender-${i}` }));
      const others = Array.from({ length: 20 }, (_, i) => claimOf(ann, `other-${i}`));
      const results = await Promise.all([...contenders, ...others].map((record) => store.idempotency.claim(record)));
      const won = results.slice(0, 5).filter((r) => r === null);
      expect(won).toHaveLength(1);
      const winner = contenders[results.indexOf(null)];
      for (const lost of results.slice(0, 5).filter((r) => r !== null)) expect(lost).toEqual(winner);
      expect(results.slice(5)).toEqual(others.map(() => null));
      await Promise.all(others.map((record, i) => store.idempotency.complete(ann, record.key, record.claim!, answer(`answer ${i}`))));
      for (const [i, record] of others.entries()) {
        const { claim: _claim, ...done } = record;
        expect(await store.idempotency.claim({ ...record, claim: "later" })).toEqual({ ...done, answer: answer(`answer ${i}`) });
      }
    });

    it("keeps the claim's answer (bytes as given, not UTF-8 alike) and ends the claim; a stale claim's answer is ignored", async () => {
      const ann = newUserId();
      const record = claimOf(ann, "k2");
      await store.idempotency.claim(record);
      await store.idempotency.complete(ann, "k2", "not the claim", answer("wrong"));
      const binary = { status: 200, headers: {}, body: Buffer.from([0xff, 0x00, 0xfe, 0x41]) };
      await store.idempotency.complete(ann, "k2", record.claim!, answer("\u0000 snow ☃ {\"a\":1}"));
      const { claim: _claim, ...done } = record;
      const kept = await store.idempotency.claim({ ...record, claim: "later" });
      expect(kept).toEqual({ ...done, answer: answer("\u0000 snow ☃ {\"a\":1}") });
      expect(Buffer.from(kept!.answer!.body).toString()).toBe("\u0000 snow ☃ {\"a\":1}");
      const other = claimOf(ann, "k3");
      await store.idempotency.claim(other);
      await store.idempotency.complete(ann, "k3", other.claim!, binary);
      expect(Buffer.from((await store.idempotency.claim(other))!.answer!.body)).toEqual(binary.body);
      // Text beyond ASCII, without a NUL byte, as most answers are.
      const text = claimOf(ann, "k2t");
      await store.idempotency.claim(text);
      await store.idempotency.complete(ann, "k2t", text.claim!, answer('{"content":"snow ☃, ünïcödé, 𝄞"}'));
      expect(Buffer.from((await store.idempotency.claim({ ...text, claim: "later" }))!.answer!.body).toString()).toBe('{"content":"snow ☃, ünïcödé, 𝄞"}');
    });

    it("keeps an answer's bytes when it comes with the text it was sent as, kept at once or lazily", async () => {
      const ann = newUserId();
      // Non-ASCII text; a NUL; a lone surrogate, whose bytes hold U+FFFD (what Node sent for it).
      const texts = ['{"content":"snow ☃, 𝄞"}', "a \u0000 b", "lone \ud800 surrogate"];
      for (const [i, text] of texts.entries()) {
        for (const lazily of [false, true]) {
          const record = claimOf(ann, `text-${i}-${lazily}`);
          await store.idempotency.claim(record);
          const given = { ...answer(text), text };
          await store.idempotency.complete(ann, record.key, record.claim!, given, lazily ? { lazily: true } : undefined);
          const kept = await store.idempotency.claim({ ...record, claim: "later" });
          expect(Buffer.from(kept!.answer!.body)).toEqual(Buffer.from(text, "utf8"));
        }
      }
    });

    it("renews, takes over only the claim it names, and releases only its own claim", async () => {
      const ann = newUserId();
      const record = claimOf(ann, "k4");
      await store.idempotency.claim(record);
      await store.idempotency.renew(ann, "k4", record.claim!, "2026-01-01T00:01:00.000Z");
      expect((await store.idempotency.claim({ ...record, claim: "x" }))!.leaseUntil).toBe("2026-01-01T00:01:00.000Z");
      const successor = { ...record, claim: "successor", fingerprint: "fp-1", leaseUntil: "2026-01-01T00:02:00.000Z" };
      expect(await store.idempotency.takeOver(successor, "someone else")).toBe(false);
      expect(await store.idempotency.takeOver(successor, record.claim!)).toBe(true);
      expect(await store.idempotency.takeOver({ ...successor, claim: "third" }, record.claim!)).toBe(false);
      // The claim taken over can neither finish nor release the key any more.
      await store.idempotency.complete(ann, "k4", record.claim!, answer("late"));
      await store.idempotency.release(ann, "k4", record.claim!);
      expect(await store.idempotency.claim({ ...record, claim: "x" })).toEqual(successor);
      await store.idempotency.release(ann, "k4", "successor");
      expect(await store.idempotency.claim(record)).toBeNull();
    });

    it("sweeps an answer kept lazily with its key, also before the answer is written", async () => {
      const ann = newUserId();
      const record = claimOf(ann, "lazy", { expiresAt: "2026-01-01T12:00:00.000Z" });
      await store.idempotency.claim(record);
      await store.idempotency.complete(ann, "lazy", record.claim!, answer("kept lazily"), { lazily: true });
      expect(await store.idempotency.sweep("2026-01-01T13:00:00.000Z", { keys: 1000, bytes: 1_000_000 })).toBeGreaterThan(0);
      expect(await store.idempotency.claim({ ...record, claim: "anew" })).toBeNull();
    });

    it("sweeps expired keys, and each user's oldest answers past the most keys or bytes, never a running claim", async () => {
      const [ann, bob] = [newUserId(), newUserId()];
      const at = (minute: number) => `2026-01-01T00:${String(minute).padStart(2, "0")}:00.000Z`;
      const keep = async (userId: string, key: string, minute: number, bytes: number, expiresAt = "2026-01-02T00:00:00.000Z") => {
        const record = claimOf(userId, key, { createdAt: at(minute), expiresAt });
        await store.idempotency.claim(record);
        await store.idempotency.complete(userId, key, record.claim!, answer("x".repeat(bytes)));
      };
      await keep(ann, "expired", 1, 10, "2026-01-01T12:00:00.000Z");
      for (let minute = 2; minute <= 6; minute++) await keep(ann, `a${minute}`, minute, 10);
      await store.idempotency.claim(claimOf(ann, "running", { createdAt: at(0) }));
      await keep(bob, "big-old", 1, 60);
      await keep(bob, "small-new", 2, 30);
      const swept = await store.idempotency.sweep("2026-01-01T13:00:00.000Z", { keys: 3, bytes: 50 });
      const present = async (userId: string, key: string) => (await store.idempotency.claim(claimOf(userId, key, { claim: "probe" }))) !== null;
      // ann: expired gone, then the 3 newest of a2..a6 kept; the running claim stays. bob: past 50 bytes, the old one goes.
      expect(swept).toBe(4);
      expect(await present(ann, "running")).toBe(true);
      for (const [key, kept] of [["a6", true], ["a5", true], ["a4", true], ["a3", false], ["a2", false], ["expired", false]] as const) {
        expect(await present(ann, key), key).toBe(kept);
      }
      expect(await present(bob, "small-new")).toBe(true);
      expect(await present(bob, "big-old")).toBe(false);
    });
  });

  it("says it is open, then closed", async () => {
    expect(store.status()).toBe("open");
    await store.close();
    expect(store.status()).toBe("closed");
  });
});
