/**
 * Group commit on PostgreSQL (issue 27; src/store/postgres/group-commit.ts): changes handed
 * to the store while a commit is on its way go together in one statement, and each writer
 * is answered only after that commit. Rows written by one transaction share its id
 * (`xmin`), which is how these tests see what went together. A batch that PostgreSQL
 * refuses writes nothing, and each of its changes is then committed on its own, so each
 * writer gets its own answer.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { ConflictError, RevisionTakenError } from "../../src/shared/errors.js";
import type { Tree } from "../../src/shared/records.js";
import { CHANGES_CHANNEL, decodeTreeNotice } from "../../src/store/postgres/notices.js";
import type { PostgresStore } from "../../src/store/postgres-store.js";
import { cardOf, changeOf, createdTrees, newTree as newTreeNamed } from "../helpers/change-records.js";
import { storeDatabase } from "../helpers/store-database.js";

const quiet = { log: () => undefined };
const database = storeDatabase();
const { sql } = database;
/** Sizes of the batches each store committed together, by store. */
const batches = new Map<PostgresStore, number[]>();

async function open(): Promise<PostgresStore> {
  const sizes: number[] = [];
  const store = await database.open({ ...quiet, onBatch: (size) => sizes.push(size) });
  batches.set(store, sizes);
  return store;
}

const newTree = (name = "Batched"): Tree => newTreeNamed(name);


/** The transaction each tree's change at `revision` was written by. */
async function transactionsOf(trees: readonly Tree[], revision: number): Promise<Map<string, string>> {
  const rows = await sql<{ tree_id: string; tx: string }>(
    "SELECT tree_id, xmin::text AS tx FROM changes WHERE tree_id = ANY($1::text[]) AND revision = $2",
    [trees.map((t) => t._id), revision],
  );
  return new Map(rows.map((r) => [r.tree_id, r.tx]));
}

describe("group commit", { timeout: 60_000 }, () => {
  it("commits concurrent writers' changes together: one transaction, every row and notice there, each answered", async () => {
    const store = await open();
    const trees = await createdTrees(store, 10);
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on("notification", (n) => {
      const notice = decodeTreeNotice(n.payload);
      if (notice && notice.revision === 2) heard.push(notice.treeId);
    });
    await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
    try {
      const writes = trees.map((tree, i) => changeOf(tree, 2, [cardOf(tree, `card ${i}`), cardOf(tree, `card ${i}b`)]));
      // Handed over in one go: the first goes at once, the nine others wait for it and go together.
      await Promise.all(writes.map((w) => store.changes.commit(w.change, w.tree)));
      expect(batches.get(store)).toContain(9);
      const transactions = await transactionsOf(trees, 2);
      expect(transactions.size).toBe(10);
      expect(new Set(transactions.values()).size).toBe(2);
      for (const [i, tree] of trees.entries()) {
        expect((await store.trees.byId(tree._id))?.revision).toBe(2);
        expect((await store.trees.byId(tree._id))?.users).toEqual(tree.users);
        expect((await store.cards.liveByTree(tree._id)).map((c) => c.content).sort()).toEqual([`card ${i}`, `card ${i}b`]);
        const [logged] = await store.changes.since(tree._id, 1, 10);
        expect(logged).toEqual(writes[i].change);
      }
      const cardIds = await sql<{ card_ids: string[] }>("SELECT card_ids FROM changes WHERE tree_id = $1 AND revision = 2", [trees[3]._id]);
      expect(cardIds[0].card_ids.sort()).toEqual(writes[3].change.after.map((c) => c._id).sort());
      const deadline = Date.now() + 5_000;
      while (heard.length < 10 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(heard.sort()).toEqual(trees.map((t) => t._id).sort());
    } finally {
      await listener.end();
    }
  });

  it("a writer whose revision another process took fails alone; the others in its batch commit, nothing of it is written", async () => {
    const store = await open();
    const other = await open();
    const trees = await createdTrees(store, 6);
    // Another process commits revision 2 of the fourth tree first.
    const taken = changeOf(trees[3], 2, [cardOf(trees[3], "the other process's")]);
    await other.changes.commit(taken.change, taken.tree);
    const writes = trees.map((tree, i) => changeOf(tree, 2, [cardOf(tree, `mine ${i}`)]));
    // A first write holds the batch up so that the six go together behind it.
    const first = changeOf(newTree("Ahead"), 1, []);
    const results = await Promise.allSettled([
      store.changes.commit(first.change, first.tree),
      ...writes.map((w) => store.changes.commit(w.change, w.tree)),
    ]);
    const [, ...mine] = results;
    expect(mine[3].status).toBe("rejected");
    expect((mine[3] as PromiseRejectedResult).reason).toBeInstanceOf(RevisionTakenError);
    for (const i of [0, 1, 2, 4, 5]) expect(mine[i].status).toBe("fulfilled");
    expect((await store.cards.liveByTree(trees[3]._id)).map((c) => c.content)).toEqual(["the other process's"]);
    for (const i of [0, 1, 2, 4, 5]) {
      expect((await store.cards.liveByTree(trees[i]._id)).map((c) => c.content)).toEqual([`mine ${i}`]);
      expect((await store.trees.byId(trees[i]._id))?.revision).toBe(2);
    }
    expect((await store.changes.since(trees[3]._id, 0, 10)).map((c) => c.after.map((card) => card.content))).toEqual([
      [],
      ["the other process's"],
    ]);
  });

  it("a card id another tree holds fails only its writer, with the conflict a lone commit gives", async () => {
    const store = await open();
    const trees = await createdTrees(store, 4);
    const held = cardOf(trees[0], "held by tree 0");
    const first = changeOf(trees[0], 2, [held]);
    // Tree 2's change reuses tree 0's card id: written, it would move the card.
    const writes = [1, 2, 3].map((i) => changeOf(trees[i], 2, [i === 2 ? { ...held, treeId: trees[i]._id, content: "moved?" } : cardOf(trees[i], `fine ${i}`)]));
    const results = await Promise.allSettled([first, ...writes].map((w) => store.changes.commit(w.change, w.tree)));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    const reason = (results[2] as PromiseRejectedResult).reason;
    expect(reason).toBeInstanceOf(ConflictError);
    expect(reason).not.toBeInstanceOf(RevisionTakenError);
    expect(String(reason.message)).toContain("exists in another tree");
    expect((await store.cards.byId(held._id))?.treeId).toBe(trees[0]._id);
    expect((await store.cards.byId(held._id))?.content).toBe("held by tree 0");
    expect((await store.trees.byId(trees[2]._id))?.revision).toBe(1);
    expect(await store.changes.since(trees[2]._id, 1, 10)).toEqual([]);
    expect((await store.trees.byId(trees[3]._id))?.revision).toBe(2);
  });

  it("two changes of one tree handed over together go one after the other, never in one batch", async () => {
    const store = await open();
    const [tree, other] = await createdTrees(store, 2);
    const second = changeOf(tree, 2, [cardOf(tree, "second")]);
    const third = changeOf(second.tree, 3, [cardOf(tree, "third")]);
    const beside = changeOf(other, 2, [cardOf(other, "beside")]);
    const ahead = changeOf(newTree("Ahead"), 1, []);
    await Promise.all([ahead, second, third, beside].map((w) => store.changes.commit(w.change, w.tree)));
    expect((await store.changes.since(tree._id, 0, 10)).map((c) => c.revision)).toEqual([1, 2, 3]);
    const [r2, r3] = await sql<{ tx: string }>("SELECT xmin::text AS tx FROM changes WHERE tree_id = $1 AND revision > 1 ORDER BY revision", [tree._id]);
    expect(r2.tx).not.toBe(r3.tx);
    expect((await store.trees.byId(tree._id))?.revision).toBe(3);
  });

  it("a batch whose connection dies fails each of its writers, and a commit after it succeeds", async () => {
    const store = await open();
    const trees = await createdTrees(store, 4);
    const databaseName = new URL(database.url).pathname.slice(1);
    // The first write's statement waits on a lock this client holds; the three others queue
    // behind it. Then the server ends every connection of the store, the held one included.
    const blocker = new pg.Client({ connectionString: database.url });
    await blocker.connect();
    try {
      const [{ pid: blockerPid }] = (await blocker.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows;
      await blocker.query("BEGIN");
      await blocker.query("SELECT 1 FROM trees WHERE id = $1 FOR UPDATE", [trees[0]._id]);
      const writes = trees.map((tree, i) => changeOf(tree, 2, [cardOf(tree, `doomed ${i}`)]));
      const results = Promise.allSettled(writes.map((w) => store.changes.commit(w.change, w.tree)));
      const waiting = Date.now() + 5_000;
      for (;;) {
        const rows = await sql("SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'", [databaseName]);
        if (rows.length > 0 || Date.now() > waiting) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> $2 AND pid <> pg_backend_pid()", [databaseName, blockerPid]);
      const settled = await results;
      expect(settled[0].status).toBe("rejected");
      await blocker.query("ROLLBACK");
      // The first failed with its connection; the three behind it went together or alone afterwards.
      const after = changeOf(trees[0], 2, [cardOf(trees[0], "after")]);
      await store.changes.commit(after.change, after.tree);
      expect((await store.cards.liveByTree(trees[0]._id)).map((c) => c.content)).toEqual(["after"]);
    } finally {
      await blocker.end().catch(() => undefined);
    }
  });
});
