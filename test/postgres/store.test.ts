/**
 * What only the PostgreSQL store has to prove (the rest is the shared contract in
 * test/store/contract.test.ts): migrations that several processes may run at once, two
 * processes that cannot commit the same revision of a tree, and a pool that outlives
 * dropped connections.
 */
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { newRecordId, newUserId } from "../../src/shared/ids.js";
import type { Change } from "../../src/shared/changes.js";
import { ConflictError } from "../../src/shared/errors.js";
import type { StoredCard, StoredUser, Tree } from "../../src/shared/records.js";
import { MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres-store.js";
import { adminQuery, createTestDatabase, dropTestDatabase } from "../helpers/postgres.js";

const quiet = { log: () => undefined };
const opened: PostgresStore[] = [];
const databases: string[] = [];

async function freshDatabase(): Promise<string> {
  const url = await createTestDatabase();
  databases.push(url);
  return url;
}

async function open(url: string): Promise<PostgresStore> {
  const store = await openPostgresStore(url, quiet);
  opened.push(store);
  return store;
}

afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
  for (const url of databases.splice(0)) await dropTestDatabase(url);
});

const at = () => new Date().toISOString();

function newTree(): Tree {
  const owner = newUserId();
  const now = at();
  return { __v: 0, _id: newRecordId(), createdAt: now, updatedAt: now, name: "Shared", owner, users: [owner], revision: 1 };
}

function cardOf(tree: Tree, content: string): StoredCard {
  const now = at();
  return { _id: newRecordId(), treeId: tree._id, parentId: null, content, position: 0, createdAt: now, updatedAt: now, __v: 0 };
}

function changeOf(tree: Tree, revision: number, after: StoredCard[]): { change: Change; tree: Tree } {
  const now = at();
  return {
    change: { treeId: tree._id, revision, at: now, userId: tree.owner, kind: revision === 1 ? "tree.create" : "card.create", before: [], after },
    tree: { ...tree, revision, updatedAt: now },
  };
}

describe("PostgreSQL migrations", () => {
  it("apply once, in one go, even when processes start together", async () => {
    const url = await freshDatabase();
    const stores = await Promise.all([open(url), open(url), open(url)]);
    const applied = stores.map((s) => s.migrations.applied);
    expect(applied.filter((a) => a.length > 0)).toEqual([MIGRATIONS.map((m) => m.version)]);
    expect(stores.every((s) => s.migrations.version === MIGRATIONS.length)).toBe(true);
    const { rows } = await adminQuery("SELECT version FROM schema_migrations ORDER BY version", url);
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    expect((await open(url)).migrations.applied).toEqual([]);
  });

  it("refuse a database whose schema is newer than the program", async () => {
    const url = await freshDatabase();
    await (await open(url)).close();
    await adminQuery("INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')", url);
    await expect(openPostgresStore(url, quiet)).rejects.toThrow(/version 99, newer than this program/);
  });
});

describe("two processes on one database", () => {
  it("cannot both commit the same revision of a tree: one wins, the other gets a ConflictError", async () => {
    const url = await freshDatabase();
    const [one, two] = [await open(url), await open(url)];
    const tree = newTree();
    const created = changeOf(tree, 1, []);
    await one.changes.commit(created.change, created.tree);
    const mine = changeOf(created.tree, 2, [cardOf(tree, "mine")]);
    const theirs = changeOf(created.tree, 2, [cardOf(tree, "theirs")]);
    const results = await Promise.allSettled([one.changes.commit(mine.change, mine.tree), two.changes.commit(theirs.change, theirs.tree)]);
    const failed = results.filter((r) => r.status === "rejected");
    expect(failed).toHaveLength(1);
    expect((failed[0] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    const contents = (await two.cards.liveByTree(tree._id)).map((c) => c.content);
    expect(contents).toHaveLength(1);
    expect((await one.changes.since(tree._id, 0, 10)).map((c) => c.revision)).toEqual([1, 2]);
    expect((await one.trees.byId(tree._id))?.revision).toBe(2);
  });

  it("refuses a change that does not follow the tree's stored revision, even once the log was pruned", async () => {
    const url = await freshDatabase();
    const store = await open(url);
    const tree = newTree();
    let current = changeOf(tree, 1, []);
    await store.changes.commit(current.change, current.tree);
    for (const revision of [2, 3]) {
      current = changeOf(current.tree, revision, [cardOf(tree, `r${revision}`)]);
      await store.changes.commit(current.change, current.tree);
    }
    await store.changes.prune(new Date(Date.now() + 60_000).toISOString());
    // A process holding the tree at revision 1 would hand out 2, which the log no longer has.
    const stale = changeOf({ ...tree, revision: 1 }, 2, [cardOf(tree, "stale")]);
    await expect(store.changes.commit(stale.change, stale.tree)).rejects.toBeInstanceOf(ConflictError);
    expect((await store.trees.byId(tree._id))?.revision).toBe(3);
    expect((await store.cards.liveByTree(tree._id)).map((c) => c.content).sort()).toEqual(["r2", "r3"]);
  });
});

describe("dropped connections", () => {
  it("are replaced by the pool: the next calls succeed right after the server ended every connection", async () => {
    const url = await freshDatabase();
    const store = await open(url);
    const tree = newTree();
    const created = changeOf(tree, 1, []);
    await store.changes.commit(created.change, created.tree);
    // Several connections in the pool, then the server ends them all (as a restart does).
    // (Reads of the store asked together share one statement and one connection: these do not.)
    await Promise.all(Array.from({ length: 4 }, () => store.pool.query("SELECT pg_sleep(0.05)")));
    const database = new URL(url).pathname.slice(1);
    await adminQuery(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database}'`);
    // No pause: a read that meets a connection the pool has not yet heard is dead (seen on
    // a loaded machine) is tried again on a fresh one.
    expect((await store.trees.byId(tree._id))?._id).toBe(tree._id);
    expect(await Promise.all(Array.from({ length: 4 }, () => store.trees.byId(tree._id).then((t) => t?._id)))).toEqual(
      Array(4).fill(tree._id),
    );
    await expect(store.ping()).resolves.toBeUndefined();
  });

  it("an unreachable database fails the open within the connect timeout, not later", async () => {
    const store = await open(await freshDatabase());
    await store.close();
    const unreachable = await openPostgresStore("postgres://postgres@127.0.0.1:1/none", { ...quiet, connectTimeoutMs: 500 }).catch(
      (err: Error) => err,
    );
    expect(unreachable).toBeInstanceOf(Error);
  });
});

describe("reads by key asked in one turn of the event loop", () => {
  it("go to the database as one statement, and each gets its own answer", async () => {
    const store = await open(await freshDatabase());
    const tree = newTree();
    const live = cardOf(tree, "live");
    const gone = cardOf(tree, "gone");
    await store.changes.commit(changeOf(tree, 1, [live, gone]).change, changeOf(tree, 1, [live, gone]).tree);
    const trashing = changeOf(tree, 2, [{ ...gone, trashed: at() }]);
    await store.changes.commit(trashing.change, trashing.tree);
    const user: StoredUser = {
      _id: tree.owner,
      email: `${tree.owner}@example.com`,
      passwordHash: "scrypt$x",
      limit: -1,
      favoriteTrees: [],
      randomIndex: 3,
      userHash: "abcd",
      createdAt: at(),
    };
    await store.users.insert(user);

    const statements = vi.spyOn(store.pool, "query");
    const [treeRead, liveRead, trashedRead, missingCard, missingTree, byId, byEmail, byEmailAgain] = await Promise.all([
      store.trees.byId(tree._id),
      store.cards.liveById(live._id),
      store.cards.liveById(gone._id),
      store.cards.liveById(newRecordId()),
      store.trees.byId(newRecordId()),
      store.users.byId(user._id),
      store.users.byEmail(user.email),
      store.users.byEmail(user.email),
    ]);
    expect(statements).toHaveBeenCalledTimes(1);
    expect(treeRead).toEqual(trashing.tree);
    expect(liveRead).toEqual(live);
    expect(trashedRead).toBeNull();
    expect(missingCard).toBeNull();
    expect(missingTree).toBeNull();
    expect(byId).toEqual(user);
    expect(byEmail).toEqual(user);
    // Each caller owns what it got, as from a statement of its own.
    expect(byEmailAgain).toEqual(user);
    expect(byEmailAgain).not.toBe(byEmail);

    // A read asked after a write sees it: nothing is answered from an earlier read.
    await store.users.update(user._id, { limit: 5 });
    expect((await Promise.all([store.users.byId(user._id), store.trees.byId(tree._id)]))[0]?.limit).toBe(5);
    // (The update is a transaction on a connection of its own; the two reads after it, one statement.)
    expect(statements).toHaveBeenCalledTimes(2);
    statements.mockRestore();
  });
});

describe("answers kept lazily", () => {
  it("that wait together reach the table in one statement, each for its own key", async () => {
    const url = await freshDatabase();
    const store = await open(url);
    const userId = newUserId();
    const now = at();
    const later = new Date(Date.now() + 60_000).toISOString();
    const records = Array.from({ length: 5 }, (_, i) => ({
      userId,
      key: `lazy-${i}`,
      fingerprint: `request ${i}`,
      claim: newRecordId(),
      leaseUntil: later,
      createdAt: now,
      expiresAt: later,
    }));
    for (const record of records) expect(await store.idempotency.claim(record)).toBeNull();
    // Kept lazily one after the other, as writers finishing together keep them.
    for (const [i, record] of records.entries()) {
      const answer = { status: 201, headers: { "content-type": "application/json" }, body: Buffer.from(JSON.stringify({ n: i })) };
      await store.idempotency.complete(userId, record.key, record.claim, answer, { lazily: true });
    }
    const rows = async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const sql = "SELECT key, status, body, xmin::text FROM idempotency_keys WHERE user_id = $1 ORDER BY key";
        return (await client.query<{ key: string; status: number | null; body: Buffer | null; xmin: string }>(sql, [userId])).rows;
      } finally {
        await client.end();
      }
    };
    await vi.waitUntil(async () => (await rows()).every((row) => row.status !== null), { timeout: 10_000, interval: 20 });
    const written = await rows();
    expect(written.map((row) => [row.key, row.status, JSON.parse(row.body!.toString())])).toEqual(records.map((r, i) => [r.key, 201, { n: i }]));
    // One transaction wrote them all (a row's xmin), not the first alone and the others after it.
    expect(new Set(written.map((row) => row.xmin)).size).toBe(1);
  });
});
