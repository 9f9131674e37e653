/**
 * A keyed change that carries its key's claim is found from the claim (migration 8): the
 * claim's row, inserted in the change's own statement, says which tree and revision the
 * change is, and the change holds no entry in the `changes_idem` index (a take-over is its
 * only reader, and every keyed write paid for it). Each way a change is committed (a lone
 * statement, a batch, one by one after a refused batch) keeps that pointer; a later command
 * of the same request, which carries the key without the claim, is found through the index
 * as before; and a pointer whose change is gone finds nothing rather than another change.
 *
 * The other way round, the commit tells where the claim's row is (its ctid), and the answer
 * kept lazily is written there without the primary key's descent (postgres/idempotency.ts);
 * a row that moved (a renewed lease) or that is not the claim's is left alone and the answer
 * goes by its key.
 */
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import type { IdempotencyRecord } from "../../src/domain/ports/store.js";
import { ANSWERS, postgresIdempotency } from "../../src/store/postgres/idempotency.js";
import { cardOf, changeOf, createdTrees } from "../helpers/change-records.js";
import { storeDatabase } from "../helpers/store-database.js";

const database = storeDatabase();
const { sql } = database;
const SINCE = "2000-01-01T00:00:00.000Z";
const quiet = { log: () => undefined };

const claimOf = (userId: string, key: string): IdempotencyRecord => ({
  userId,
  key,
  fingerprint: "fp",
  claim: `claim of ${key}`,
  leaseUntil: "2999-01-01T00:00:30.000Z",
  createdAt: "2000-01-01T00:00:00.000Z",
  expiresAt: "2999-01-02T00:00:00.000Z",
});
const keyed = (userId: string, key: string, step: number, claimed: boolean) => ({
  userId,
  key,
  fingerprint: "fp",
  step,
  ...(claimed ? { claim: claimOf(userId, key) } : {}),
});


/** What the table holds of the key: where its claim leads, and the key's changes that are in changes_idem. */
async function bookkeeping(userId: string, key: string) {
  const [claim] = await sql("SELECT change_tree, change_revision FROM idempotency_keys WHERE user_id = $1 AND key = $2", [userId, key]);
  const indexed = await sql("SELECT tree_id, revision FROM changes WHERE idem = $1 AND idem_claimed IS NULL ORDER BY revision", [`${userId} ${key}`]);
  return { claim, indexed };
}

describe("a claim leads to the change it was inserted with", { timeout: 60_000 }, () => {
  it("in a lone statement, in a batch, and one by one after a refused batch; a later step of the key is found through the index", async () => {
    const batches: number[] = [];
    const store = await database.open({ log: () => undefined, onBatch: (size) => batches.push(size) });
    const trees = await createdTrees(store, 5);
    const userId = trees[0].owner;

    // A lone keyed change with its claim, then the same request's next command (claimed already).
    const lone = changeOf(trees[0], 2, [cardOf(trees[0], "lone")]);
    await store.changes.commit(lone.change, lone.tree, keyed(userId, "lone", 0, true));
    const next = changeOf(lone.tree, 3, [cardOf(trees[0], "next step")]);
    await store.changes.commit(next.change, next.tree, keyed(userId, "lone", 1, false));
    expect(await store.changes.byKey(userId, "lone", SINCE)).toEqual([
      { step: 0, change: lone.change },
      { step: 1, change: next.change },
    ]);
    expect(await bookkeeping(userId, "lone")).toEqual({ claim: { change_tree: trees[0]._id, change_revision: 2 }, indexed: [{ tree_id: trees[0]._id, revision: 3 }] });

    // Three keyed changes handed over together: the first goes alone, the other two as one batch.
    const batched = [1, 2, 3].map((i) => changeOf(trees[i], 2, [cardOf(trees[i], `batched ${i}`)]));
    await Promise.all(batched.map((w, i) => store.changes.commit(w.change, w.tree, keyed(userId, `batched-${i}`, 0, true))));
    expect(batches.splice(0)).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 2]);
    for (const [i, w] of batched.entries()) {
      expect(await store.changes.byKey(userId, `batched-${i}`, SINCE)).toEqual([{ step: 0, change: w.change }]);
      expect(await bookkeeping(userId, `batched-${i}`)).toEqual({ claim: { change_tree: w.tree._id, change_revision: 2 }, indexed: [] });
    }

    // A batch PostgreSQL refuses (a card id another tree holds): its changes are committed one by one.
    const held = cardOf(trees[4], "held");
    const holder = changeOf(trees[4], 2, [held]);
    const refused = changeOf(trees[1], 3, [{ ...held, treeId: trees[1]._id }]);
    const alone = changeOf(trees[2], 3, [cardOf(trees[2], "committed on its own")]);
    const results = await Promise.allSettled([
      store.changes.commit(holder.change, holder.tree),
      store.changes.commit(refused.change, refused.tree, keyed(userId, "refused", 0, true)),
      store.changes.commit(alone.change, alone.tree, keyed(userId, "alone", 0, true)),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    // The holder went alone; the batch after it was refused whole, so no batch of two committed.
    expect(batches).toEqual([1]);
    expect(await store.changes.byKey(userId, "alone", SINCE)).toEqual([{ step: 0, change: alone.change }]);
    expect(await bookkeeping(userId, "alone")).toEqual({ claim: { change_tree: trees[2]._id, change_revision: 3 }, indexed: [] });
    expect(await store.changes.byKey(userId, "refused", SINCE)).toEqual([]);
    expect(await bookkeeping(userId, "refused")).toEqual({ claim: undefined, indexed: [] });
  });

  it("finds nothing when the change the claim leads to is gone and another change holds its tree and revision", async () => {
    const store = await database.open({ log: () => undefined });
    const [tree] = await createdTrees(store, 1);
    const userId = tree.owner;
    const mine = changeOf(tree, 2, [cardOf(tree, "keyed, then removed with its tree")]);
    await store.changes.commit(mine.change, mine.tree, keyed(userId, "gone", 0, true));
    expect(await store.changes.byKey(userId, "gone", SINCE)).toEqual([{ step: 0, change: mine.change }]);
    // The tree removed and made again under its id (a client-chosen id), up to the same revision.
    await store.trees.removeWithCards(tree._id);
    const again = changeOf({ ...tree, revision: 1 }, 1, []);
    await store.changes.commit(again.change, again.tree);
    const other = changeOf(again.tree, 2, [cardOf(tree, "someone else's")]);
    await store.changes.commit(other.change, other.tree, keyed(userId, "another key", 0, true));
    expect(await store.changes.byKey(userId, "gone", SINCE)).toEqual([]);
    expect(await store.changes.byKey(userId, "another key", SINCE)).toEqual([{ step: 0, change: other.change }]);
  });
});

/**
 * The answers sent while `work` runs (on any pool): each answer's key and the row it named, in
 * a statement of answers or riding in a batch of claims (its last parameter).
 */
async function answersSent(work: () => Promise<void>, statement = "idempotency-answers"): Promise<{ key: string; row: string | undefined }[]> {
  const sent: { key: string; row: string | undefined }[] = [];
  const query = pg.Pool.prototype.query;
  pg.Pool.prototype.query = function (this: pg.Pool, ...args: unknown[]) {
    const config = args[0] as { name?: string; values?: unknown[] };
    if (typeof config === "object" && config.name === statement) {
      for (const a of JSON.parse(config.values!.at(-1) as string)) sent.push({ key: a.k, row: a.r });
    }
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    await work();
  } finally {
    pg.Pool.prototype.query = query;
  }
  return sent;
}

const answerOf = (text: string) => ({ status: 201, headers: { "content-type": "text/plain" }, body: Buffer.from(text) });

async function rowsOf(userId: string): Promise<{ key: string; row: string; claim: string | null; body: string | null }[]> {
  const rows = await sql("SELECT key, ctid::text AS row, claim, convert_from(body, 'UTF8') AS body FROM idempotency_keys WHERE user_id = $1 ORDER BY key", [userId]);
  return rows;
}

describe("an answer kept lazily is written where its claim was inserted", { timeout: 60_000 }, () => {
  it("names the claim's row from a lone statement, a batch and a commit on its own, and lands there", async () => {
    const store = await database.open(quiet);
    const trees = await createdTrees(store, 5);
    const userId = trees[0].owner;
    const commits = async () => {
      const lone = changeOf(trees[0], 2, [cardOf(trees[0], "lone")]);
      await store.changes.commit(lone.change, lone.tree, keyed(userId, "a-lone", 0, true));
      // The first goes alone, the other two as one batch.
      const batched = [1, 2, 3].map((i) => changeOf(trees[i], 2, [cardOf(trees[i], `batched ${i}`)]));
      await Promise.all(batched.map((w, i) => store.changes.commit(w.change, w.tree, keyed(userId, `b-batched-${i}`, 0, true))));
      // A refused batch: the keyed change is committed on its own.
      const held = cardOf(trees[4], "held");
      const holder = changeOf(trees[4], 2, [held]);
      const refused = changeOf(trees[1], 3, [{ ...held, treeId: trees[1]._id }]);
      const alone = changeOf(trees[2], 3, [cardOf(trees[2], "on its own")]);
      const results = await Promise.allSettled([
        store.changes.commit(holder.change, holder.tree),
        store.changes.commit(refused.change, refused.tree),
        store.changes.commit(alone.change, alone.tree, keyed(userId, "c-alone", 0, true)),
      ]);
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    };
    await commits();
    const claimed = await rowsOf(userId);
    expect(claimed.map((r) => r.key)).toEqual(["a-lone", "b-batched-0", "b-batched-1", "b-batched-2", "c-alone"]);
    const sent = await answersSent(async () => {
      for (const r of claimed) await store.idempotency.complete(userId, r.key, r.claim!, answerOf(`answer of ${r.key}`), { lazily: true });
      await vi.waitUntil(async () => (await rowsOf(userId)).every((r) => r.claim === null), { timeout: 10_000, interval: 20 });
    });
    expect(sent).toEqual(claimed.map((r) => ({ key: r.key, row: r.row })));
    expect((await rowsOf(userId)).map((r) => [r.key, r.body])).toEqual(claimed.map((r) => [r.key, `answer of ${r.key}`]));
  });

  it("goes by the key when the row moved (a renewed lease), and never writes a row that is another key's", async () => {
    const store = await database.open(quiet);
    const [tree] = await createdTrees(store, 1);
    const userId = tree.owner;
    let at = tree;
    for (const key of ["moved", "mine", "theirs"]) {
      const next = changeOf(at, (at.revision ?? 0) + 1, [cardOf(tree, key)]);
      await store.changes.commit(next.change, next.tree, keyed(userId, key, 0, true));
      at = next.tree;
    }
    const before = await rowsOf(userId);
    await store.idempotency.renew(userId, "moved", "claim of moved", "2999-01-01T00:01:00.000Z");
    expect((await rowsOf(userId)).find((r) => r.key === "moved")!.row).not.toBe(before.find((r) => r.key === "moved")!.row);
    // Another process's keys as if "mine" had been inserted where "theirs" is.
    const other = postgresIdempotency(store.pool, () => undefined);
    other.claimedAtCommit(claimOf(userId, "mine"), before.find((r) => r.key === "theirs")!.row);
    const sent = await answersSent(async () => {
      await store.idempotency.complete(userId, "moved", "claim of moved", answerOf("moved, answered"), { lazily: true });
      await other.complete(userId, "mine", "claim of mine", answerOf("mine, answered"), { lazily: true });
      await other.flush();
      await vi.waitUntil(async () => (await rowsOf(userId)).filter((r) => r.claim === null).length === 2, { timeout: 10_000, interval: 20 });
    });
    expect(sent.map((a) => a.key).sort()).toEqual(["mine", "moved"]);
    expect((await rowsOf(userId)).map((r) => [r.key, r.claim, r.body])).toEqual([
      ["mine", null, "mine, answered"],
      ["moved", null, "moved, answered"],
      ["theirs", "claim of theirs", null],
    ]);
  });
  it("writes the answers that find their rows there without descending the primary key or scanning the table", async () => {
    const store = await database.open(quiet);
    const [tree] = await createdTrees(store, 1);
    const userId = tree.owner;
    let at = tree;
    for (const key of ["p", "q", "r"]) {
      const next = changeOf(at, (at.revision ?? 0) + 1, [cardOf(tree, key)]);
      await store.changes.commit(next.change, next.tree, keyed(userId, key, 0, true));
      at = next.tree;
    }
    // Other users' keys, as a table in use holds them (the planner scanned all of a table this size, joined row by row).
    await sql(
      `INSERT INTO idempotency_keys (user_id, key, fingerprint, lease_until, created_at, expires_at, status)
       SELECT 'someone ' || (g % 100), 'key ' || g, 'fp', 'x', 'x', 'x', 201 FROM generate_series(1, 3000) AS g`,
    );
    await sql("ANALYZE idempotency_keys");
    const answers = (await rowsOf(userId)).map((r) => ({ u: userId, k: r.key, c: r.claim, s: 200, h: {}, t: `answer of ${r.key}`, r: r.row }));
    const [{ "QUERY PLAN": plan }] = await sql(`EXPLAIN (ANALYZE, FORMAT JSON) ${ANSWERS}`, [JSON.stringify(answers)]);
    /** The scans of the table that ran, and the rows each found. */
    const scans = (node: any): string[] => [
      ...(node["Relation Name"] === "idempotency_keys" && node["Node Type"].endsWith("Scan") && node["Actual Loops"] > 0 ? [`${node["Node Type"]}: ${node["Actual Rows"]}`] : []),
      ...(node.Plans ?? []).flatMap(scans),
    ];
    // One look at the rows where the claims were inserted: neither the primary key nor the table is scanned.
    expect(scans(plan[0].Plan)).toEqual(["Tid Scan: 3"]);
    expect((await rowsOf(userId)).map((r) => [r.key, r.claim, r.body])).toEqual(["p", "q", "r"].map((k) => [k, null, `answer of ${k}`]));
  });
  it("rides in the next batch of claims at its row too", async () => {
    const store = await database.open(quiet);
    const [tree] = await createdTrees(store, 1);
    const userId = tree.owner;
    const next = changeOf(tree, 2, [cardOf(tree, "answered with a claim")]);
    await store.changes.commit(next.change, next.tree, keyed(userId, "riding", 0, true));
    const [claimed] = await rowsOf(userId);
    const sent = await answersSent(async () => {
      await store.idempotency.complete(userId, "riding", "claim of riding", answerOf("rode with a claim"), { lazily: true });
      // A key claimed before its command runs, within the 100 ms the answer waits: the answer goes with it.
      expect(await store.idempotency.claim(claimOf(userId, "claimed before"))).toBeNull();
    }, "idempotency-claims-answers");
    expect(sent).toEqual([{ key: "riding", row: claimed.row }]);
    expect((await rowsOf(userId)).map((r) => [r.key, r.claim, r.body])).toEqual([
      ["claimed before", "claim of claimed before", null],
      ["riding", null, "rode with a claim"],
    ]);
  });
});
