/**
 * A later change of a keyed request (one that holds its key's claim already: `ChangeKey.held`)
 * goes only while the key's record still holds that claim, on every way a change is committed
 * (the lone statements, a batch, one by one after a refused batch), and a take-over of the
 * claim waits for such a change in flight, so that it then finds it (issue 26; docs/decisions.md,
 * "A keyed commit checks its claim"). A change that carries its claim, and a plain change,
 * go as before.
 */
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import { loadConfig } from "../../src/config.js";
import { createCard } from "../../src/domain/cards.js";
import { execute } from "../../src/domain/command.js";
import { createDomainContext, type DomainContext } from "../../src/domain/context.js";
import { LEASE_MS, startKeyed, type RunningKey } from "../../src/domain/idempotency.js";
import type { ChangeKey, IdempotencyRecord } from "../../src/domain/ports/store.js";
import type { Actor } from "../../src/domain/policy.js";
import { createTree, deleteTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import { KeyClaimLostError } from "../../src/shared/errors.js";
import type { Tree } from "../../src/shared/records.js";
import type { PostgresStore } from "../../src/store/postgres-store.js";
import { cardOf, changeOf, createdTrees, newTree } from "../helpers/change-records.js";
import { storeDatabase } from "../helpers/store-database.js";

const database = storeDatabase();
const { sql } = database;
const SINCE = "2000-01-01T00:00:00.000Z";

const claimOf = (userId: string, key: string): IdempotencyRecord => ({
  userId,
  key,
  fingerprint: "fp",
  claim: `mine: ${key}`,
  leaseUntil: "2999-01-01T00:00:30.000Z",
  createdAt: "2000-01-01T00:00:00.000Z",
  expiresAt: "2999-01-02T00:00:00.000Z",
});
/** The key of step `step` of the request that holds `key`'s claim `mine: <key>`. */
const held = (userId: string, key: string, step: number): ChangeKey => ({ userId, key, fingerprint: "fp", step, held: `mine: ${key}` });

/** Commits step 0 of `key` on `tree`, carrying its claim: the key is then claimed, as by a request's first change. */
async function claimed(store: PostgresStore, tree: Tree, key: string): Promise<Tree> {
  const first = changeOf(tree, tree.revision! + 1, [cardOf(tree, `${key} step 0`)]);
  await store.changes.commit(first.change, first.tree, { userId: tree.owner, key, fingerprint: "fp", step: 0, claim: claimOf(tree.owner, key) });
  return first.tree;
}

/** What another process's take-over does to the claim (idempotency.ts `takeOver`). */
const takeOver = (userId: string, key: string) =>
  sql("UPDATE idempotency_keys SET claim = 'theirs' WHERE user_id = $1 AND key = $2 AND claim = $3 RETURNING claim", [userId, key, `mine: ${key}`]);

const revisionOf = async (treeId: string) => (await sql("SELECT revision FROM trees WHERE id = $1", [treeId]))[0]?.revision;

describe("a keyed request's later change checks its claim in the database", { timeout: 60_000 }, () => {
  it("alone: goes while the claim is the request's, and once taken over writes nothing, a tree's creation included", async () => {
    const store = await database.open({ log: () => undefined });
    const [base] = await createdTrees(store, 1);
    const userId = base.owner;
    const tree = await claimed(store, base, "lone");
    const second = changeOf(tree, 3, [cardOf(tree, "step 1")]);
    await store.changes.commit(second.change, second.tree, held(userId, "lone", 1));
    const made = changeOf({ ...newTree("Made by step 2"), owner: userId }, 1, []);
    await store.changes.commit(made.change, made.tree, held(userId, "lone", 2));

    expect(await takeOver(userId, "lone")).toEqual([{ claim: "theirs" }]);
    const third = changeOf(second.tree, 4, [cardOf(tree, "step 3")]);
    await expect(store.changes.commit(third.change, third.tree, held(userId, "lone", 3))).rejects.toBeInstanceOf(KeyClaimLostError);
    const unmade = changeOf({ ...newTree("Made by step 4"), owner: userId }, 1, []);
    await expect(store.changes.commit(unmade.change, unmade.tree, held(userId, "lone", 4))).rejects.toBeInstanceOf(KeyClaimLostError);

    expect((await store.changes.byKey(userId, "lone", SINCE)).map((s) => s.step)).toEqual([0, 1, 2]);
    expect(await revisionOf(tree._id)).toBe(3);
    expect(await revisionOf(unmade.tree._id)).toBeUndefined();
    expect(await sql("SELECT count(*)::integer AS n FROM cards WHERE tree_id = $1", [tree._id])).toEqual([{ n: 2 }]);
    // The tree's next plain change is not held back by what was refused.
    const plain = changeOf(second.tree, 4, [cardOf(tree, "plain")]);
    await store.changes.commit(plain.change, plain.tree);
  });

  it("in a batch: only the change whose claim was taken over is refused, the others commit", async () => {
    const batches: number[] = [];
    const store = await database.open({ log: () => undefined, onBatch: (size) => batches.push(size) });
    const trees = await createdTrees(store, 4);
    const userId = trees[0].owner;
    const [lost, kept] = [await claimed(store, { ...trees[1], owner: userId }, "lost"), await claimed(store, { ...trees[2], owner: userId }, "kept")];
    await takeOver(userId, "lost");
    batches.splice(0);

    // The first goes alone; the other three go together, as one batch.
    const alone = changeOf(trees[0], 2, [cardOf(trees[0], "alone")]);
    const lostStep = changeOf(lost, 3, [cardOf(lost, "lost step 1")]);
    const keptStep = changeOf(kept, 3, [cardOf(kept, "kept step 1")]);
    const plain = changeOf(trees[3], 2, [cardOf(trees[3], "plain")]);
    const results = await Promise.allSettled([
      store.changes.commit(alone.change, alone.tree),
      store.changes.commit(lostStep.change, lostStep.tree, held(userId, "lost", 1)),
      store.changes.commit(keptStep.change, keptStep.tree, held(userId, "kept", 1)),
      store.changes.commit(plain.change, plain.tree),
    ]);
    expect(results.map((r) => (r.status === "rejected" ? r.reason.constructor.name : r.status))).toEqual(["fulfilled", "KeyClaimLostError", "fulfilled", "fulfilled"]);
    expect(batches).toEqual([1, 2]);
    expect((await store.changes.byKey(userId, "lost", SINCE)).map((s) => s.step)).toEqual([0]);
    expect((await store.changes.byKey(userId, "kept", SINCE)).map((s) => s.step)).toEqual([0, 1]);
    expect([await revisionOf(lost._id), await revisionOf(kept._id), await revisionOf(trees[3]._id)]).toEqual([2, 3, 2]);
  });

  it("one by one after a refused batch: the change whose claim was taken over is refused there too", async () => {
    const store = await database.open({ log: () => undefined });
    const trees = await createdTrees(store, 3);
    const userId = trees[0].owner;
    const lost = await claimed(store, { ...trees[1], owner: userId }, "lost alone");
    await takeOver(userId, "lost alone");

    // A card id another tree holds refuses the batch whole: each change then goes on its own.
    const holding = cardOf(trees[0], "held");
    const holder = changeOf(trees[0], 2, [holding]);
    const stealing = changeOf(trees[2], 2, [{ ...holding, treeId: trees[2]._id }]);
    const lostStep = changeOf(lost, 3, [cardOf(lost, "lost step 1")]);
    const results = await Promise.allSettled([
      store.changes.commit(holder.change, holder.tree),
      store.changes.commit(stealing.change, stealing.tree),
      store.changes.commit(lostStep.change, lostStep.tree, held(userId, "lost alone", 1)),
    ]);
    expect(results.map((r) => (r.status === "rejected" ? r.reason.constructor.name : r.status))).toEqual(["fulfilled", "ConflictError", "KeyClaimLostError"]);
    expect((await store.changes.byKey(userId, "lost alone", SINCE)).map((s) => s.step)).toEqual([0]);
    expect(await revisionOf(lost._id)).toBe(2);
  });

  it("a tree's removal under the claim: removed while the claim is the request's, left whole once taken over", async () => {
    const store = await database.open({ log: () => undefined });
    const trees = await createdTrees(store, 2);
    const userId = trees[0].owner;
    const [gone, stays] = [await claimed(store, { ...trees[0], owner: userId }, "removes"), await claimed(store, { ...trees[1], owner: userId }, "lost removal")];
    const removal = (key: string) => ({ key: held(userId, key, 1), at: new Date().toISOString(), expiresAt: "2999-01-02T00:00:00.000Z" });
    await store.trees.removeWithCards(gone._id, removal("removes"));
    await takeOver(userId, "lost removal");
    await expect(store.trees.removeWithCards(stays._id, removal("lost removal"))).rejects.toBeInstanceOf(KeyClaimLostError);

    expect(await revisionOf(gone._id)).toBeUndefined();
    expect((await store.changes.byKey(userId, "removes", SINCE)).map((s) => s.step)).toEqual([1]);
    expect(await revisionOf(stays._id)).toBe(2);
    expect(await sql("SELECT count(*)::integer AS n FROM cards WHERE tree_id = $1", [stays._id])).toEqual([{ n: 1 }]);
    expect((await store.changes.byKey(userId, "lost removal", SINCE)).map((s) => s.step)).toEqual([0]);
  });

  for (const way of ["alone", "in a batch", "a tree's removal"] as const) {
    it(`${way}: a take-over waits for a write in flight under the claim, and then finds it`, async () => {
      const batches: number[] = [];
      const store = await database.open({ log: () => undefined, onBatch: (size) => batches.push(size) });
      const trees = await createdTrees(store, 3);
      const userId = trees[0].owner;
      const key = `in flight ${way}`;
      const tree = await claimed(store, { ...trees[0], owner: userId }, key);
      batches.splice(0);
      const blocker = new pg.Client({ connectionString: database.url });
      await blocker.connect();
      try {
        // The change waits in the database on its tree's row, held by another session.
        await blocker.query("BEGIN");
        await blocker.query("SELECT 1 FROM trees WHERE id = $1 FOR UPDATE", [tree._id]);
        const step = changeOf(tree, 3, [cardOf(tree, "step 1")]);
        const committing: Promise<void>[] = [];
        if (way === "in a batch") {
          // With a change in flight, the next two handed over go together.
          const ahead = changeOf(trees[1], 2, [cardOf(trees[1], "ahead")]);
          committing.push(store.changes.commit(ahead.change, ahead.tree));
        }
        if (way === "a tree's removal") {
          committing.push(store.trees.removeWithCards(tree._id, { key: held(userId, key, 1), at: new Date().toISOString(), expiresAt: "2999-01-02T00:00:00.000Z" }));
        } else committing.push(store.changes.commit(step.change, step.tree, held(userId, key, 1)));
        if (way === "in a batch") {
          const beside = changeOf(trees[2], 2, [cardOf(trees[2], "beside")]);
          committing.push(store.changes.commit(beside.change, beside.tree));
        }
        const waiting = async () =>
          (await sql("SELECT count(*)::integer AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"))[0].n;
        await vi.waitFor(async () => expect(await waiting()).toBe(1), { timeout: 5_000, interval: 20 });

        // Another process takes the claim over, then reads what the request committed.
        let settled = false;
        const takingOver = takeOver(userId, key).then(async (row) => ({ row, found: await store.changes.byKey(userId, key, SINCE) }));
        void takingOver.finally(() => (settled = true));
        for (const deadline = Date.now() + 5_000; !settled && Date.now() < deadline && (await waiting()) < 2; ) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await blocker.query("COMMIT");
        await Promise.all(committing);
        const { row, found } = await takingOver;
        expect(row).toEqual([{ claim: "theirs" }]);
        // A removal takes the tree's changes with it, step 0's among them.
        expect(found.map((s) => s.step)).toEqual(way === "a tree's removal" ? [1] : [0, 1]);
        expect(batches).toEqual(way === "in a batch" ? [1, 2] : way === "alone" ? [1] : []);
      } finally {
        await blocker.end();
      }
    });
  }
});

describe("through the domain: a request whose claim another process took over (stores in this process, on one database)", { timeout: 60_000 }, () => {
  const config = loadConfig({ EXPORT_WORKERS: "0" });
  const open = async (clock?: { now(): string }): Promise<DomainContext> => {
    const store = await database.open({ log: () => undefined });
    return createDomainContext(store, config, { formats: formatsOffThread(config.exports), hasher: scryptHasherFor(config.limits), clock });
  };
  async function keyedRun(ctx: DomainContext, userId: string): Promise<RunningKey> {
    const start = await startKeyed(ctx, { userId, key: "taken over", fingerprint: "steps" });
    if (!("run" in start)) throw new Error("expected the key to run");
    return start.run;
  }

  it("commits no later step and removes no tree: unavailable, nothing written", async () => {
    let later = 0;
    const processA = await open();
    const processB = await open({ now: () => new Date(Date.now() + later).toISOString() });
    const alice: Actor = await execute(processA, null, signUp, {}, { email: "taken-over@example.com", password: "correct horse battery" });
    const tree = await execute(processA, alice, createTree, {}, { name: "Steps" });
    const other = await execute(processA, alice, createTree, {}, { name: "To remove" });
    const step = (ctx: DomainContext, content: string) => execute(ctx, alice, createCard, { treeId: tree._id }, { treeId: tree._id, position: 1, content });

    const onA = await keyedRun(processA, alice._id);
    const first = await onA.enter(() => step(processA, "step one"));
    // A stalls past its lease (B's clock is past it): B takes the claim over and answers step one from A's change.
    later = LEASE_MS + 1_000;
    const onB = await keyedRun(processB, alice._id);
    expect(await onB.enter(() => step(processB, "step one"))).toEqual(first);
    await onB.finish({ status: 200, headers: {}, body: Buffer.from("{}") });

    await expect(onA.enter(() => step(processA, "step two"))).rejects.toBeInstanceOf(KeyClaimLostError);
    await expect(onA.enter(() => execute(processA, alice, deleteTree, { treeId: other._id }, {}))).rejects.toBeInstanceOf(KeyClaimLostError);
    await onA.finish({ status: 503, headers: {}, body: Buffer.from("{}") });
    expect((await processB.store.cards.liveByTree(tree._id)).map((c) => c.content).filter((c) => c !== "")).toEqual(["step one"]);
    expect(await processB.store.trees.byId(other._id)).not.toBeNull();
  });
});
