/**
 * Keyed writes handed over ahead of their commit (issue 26 with issue 27; src/store/postgres-store.ts
 * `commitEarly`, group-commit.ts RUN_KEYED_SQL): a keyed request's first change carries its
 * Idempotency-Key's claim into the group commit and lets the tree's lock go at once, as a plain
 * change does (test/postgres/ahead.test.ts), and a busy tree's keyed changes go to the database
 * together, each claim with its change. SPEC §13 still holds for each: the answer waits for the
 * COMMIT, is kept and replayed once; the same key while the first runs is 409, with another
 * request 422; a claim is written once, with its change, or not at all.
 *
 * Domain contexts on one PostgreSQL database stand for server processes (as in ahead.test.ts);
 * a keyed request runs as the HTTP layer runs one (src/http/idempotency.ts): started, run in
 * its key's context, finished with its answer. Process `deaf` is not told of the other's changes.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createCard } from "../../src/domain/cards.js";
import { commitChange } from "../../src/domain/changes.js";
import { execute, treeCommand } from "../../src/domain/command.js";
import type { DomainContext } from "../../src/domain/context.js";
import { startKeyed } from "../../src/domain/idempotency.js";
import type { Actor } from "../../src/domain/policy.js";
import { createTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { IdempotencyKeyReusedError, KeyAnsweredError, KeyInFlightError } from "../../src/shared/errors.js";
import { newRecordId } from "../../src/shared/ids.js";
import type { StoredCard } from "../../src/shared/records.js";
import { idempotencyId } from "../../src/store/idempotency-records.js";
import { DomainProcesses } from "../helpers/domain-processes.js";
import { createTestDatabase, dropTestDatabase, StatementHold, treeQueries } from "../helpers/postgres.js";

let url: string;
let processes: DomainProcesses;
let deaf: DomainContext;
let other: DomainContext;
let owner: Actor;

/** The deaf process's next statement of a name, held until released. */
const statements = new StatementHold();
/** The deaf process's statements by name: sent, refused by PostgreSQL, and runs that wrote nothing (a guard failed). */
const sent = new Map<string, number>();
const failed = new Map<string, number>();
const staleRuns = new Map<string, number>();
const bump = (counts: Map<string, number>, name: string) => counts.set(name, (counts.get(name) ?? 0) + 1);
/** Changes the deaf process's writes handed to its store (`commitEarly`), ahead or not. */
let handed = 0;
/** Resolves once the deaf process's writes have handed `count` more changes to the store than `from`. */
const handedOver = (from: number, count: number) => vi.waitFor(() => expect(handed).toBeGreaterThanOrEqual(from + count), { timeout: 20_000, interval: 5 });

const holdStatement = (name: string) => statements.hold(name);

beforeAll(async () => {
  url = await createTestDatabase();
  processes = new DomainProcesses(url);
  deaf = await processes.start((store) => {
    const query = store.pool.query.bind(store.pool) as (...args: unknown[]) => Promise<{ rows: { fresh?: boolean }[] }>;
    (store.pool as { query: unknown }).query = async (...args: unknown[]) => {
      const config = args[0] as { name?: string } | string;
      const name = typeof config === "object" && config.name ? config.name : "";
      await statements.passing(name);
      bump(sent, name);
      try {
        const result = await query(...args);
        if (name.startsWith("cardtree-run") && result.rows[0]?.fresh === false) bump(staleRuns, name);
        return result;
      } catch (err) {
        bump(failed, name);
        throw err;
      }
    };
    const changes = store.changes;
    return {
      ...store,
      heard: undefined,
      changes: {
        ...changes,
        commitEarly: (...args: Parameters<NonNullable<typeof changes.commitEarly>>) => {
          handed++;
          return changes.commitEarly!(...args);
        },
      },
    };
  });
  other = await processes.start((store) => store);
  owner = await execute(other, null, signUp, {}, { email: "ahead-keyed@example.com", password: "correct horse battery" });
});

afterAll(async () => {
  await processes?.close();
  if (url) await dropTestDatabase(url);
});

const { sql, logOf, contentsOf } = treeQueries(() => url);

const create = (ctx: DomainContext, treeId: string, content: string, actor: Actor = owner) =>
  execute(ctx, actor, createCard, { treeId }, { treeId, content, position: 0, parentId: null });

/** What a keyed request answered: run here (`replayed` false) or the key's kept answer. */
interface Answered {
  replayed: boolean;
  body: string;
}

/**
 * A keyed card creation: the kept answer, or the card's (its id and content) once run here.
 * @throws KeyInFlightError (409) or IdempotencyKeyReusedError (422) as SPEC §13 says.
 */
async function keyedCreate(ctx: DomainContext, treeId: string, key: string, content: string, actor: Actor = owner): Promise<Answered> {
  const start = await startKeyed(ctx, { userId: actor._id, key, fingerprint: `create ${content}` });
  if ("replay" in start) return { replayed: true, body: start.replay.body.toString() };
  const { run } = start;
  let body = "";
  try {
    const card = await run.enter(() => create(ctx, treeId, content, actor));
    body = JSON.stringify({ id: card._id, content: card.content });
  } catch (err) {
    // The key holds another run's answer or refusal (`finish` gives it); anything else is this test's failure.
    if (!(err instanceof KeyAnsweredError)) {
      await run.finish({ status: 500, headers: {}, body: Buffer.from("{}") });
      throw err;
    }
  }
  const outcome = await run.finish({ status: 201, headers: {}, body: Buffer.from(body) });
  if (!outcome) return { replayed: false, body };
  if ("replay" in outcome) return { replayed: true, body: outcome.replay.body.toString() };
  throw outcome.refuse;
}


/**
 * Each key's record and the changes carrying the key, by key: the change the claim leads to
 * (migration 8) and every change logged with the key. A key written once has one record, whose
 * claim leads to its one change.
 */
async function keysOf(actor: Actor, keys: readonly string[]): Promise<Map<string, { leadsTo: string | null; changes: string[] }>> {
  const rows = await sql<{ key: string; leads_to: string | null; changes: string[] }>(
    `SELECT k.key, (SELECT c.record->'after'->0->>'content' FROM changes AS c
         WHERE c.tree_id = k.change_tree AND c.revision = k.change_revision AND c.idem = $1 || ' ' || k.key) AS leads_to,
       ARRAY(SELECT c.record->'after'->0->>'content' FROM changes AS c WHERE c.idem = $1 || ' ' || k.key) AS changes
     FROM idempotency_keys AS k WHERE k.user_id = $1 AND k.key = ANY($2::text[])`,
    [actor._id, [...keys]],
  );
  return new Map(rows.map((row) => [row.key, { leadsTo: row.leads_to, changes: row.changes }]));
}

/**
 * Runs `work` and reports, for each lazily kept answer sent meanwhile (on any pool, alone or
 * riding with claims), whether the row it named (`r`, the claim's ctid from its commit) was
 * its key's row in the table when the answer went.
 */
async function answersAtTheirRows(userId: string, work: () => Promise<void>): Promise<Map<string, boolean>> {
  const found = new Map<string, boolean>();
  const query = pg.Pool.prototype.query;
  pg.Pool.prototype.query = async function (this: pg.Pool, ...args: unknown[]) {
    const config = args[0] as { name?: string; values?: unknown[] };
    if (typeof config === "object" && (config.name === "idempotency-answers" || config.name === "idempotency-claims-answers")) {
      const answers = (JSON.parse(config.values!.at(-1) as string) as { u: string; k: string; r?: string }[]).filter((a) => a.u === userId);
      const rows = await sql<{ key: string; row: string }>("SELECT key, ctid::text AS row FROM idempotency_keys WHERE user_id = $1 AND key = ANY($2::text[])", [
        userId,
        answers.map((a) => a.k),
      ]);
      for (const a of answers) found.set(a.k, a.r !== undefined && rows.find((r) => r.key === a.k)?.row === a.r);
    }
    return (query as (...a: unknown[]) => Promise<unknown>).apply(this, args);
  } as typeof query;
  try {
    await work();
  } finally {
    pg.Pool.prototype.query = query;
  }
  return found;
}

const labels = (label: string, count: number) => Array.from({ length: count }, (_, i) => `${label} ${i}`);

/** Waits until the process's lazily kept answers reached the table (the next request there reads them). */
async function answersLanded(actor: Actor, keys: readonly string[]): Promise<void> {
  for (let tries = 0; tries < 100; tries++) {
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM idempotency_keys WHERE user_id = $1 AND key = ANY($2::text[]) AND status IS NOT NULL", [
      actor._id,
      [...keys],
    ]);
    if (n === keys.length) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("the answers were not kept");
}

describe("keyed writes on a busy tree handed over ahead of their commit", { timeout: 60_000 }, () => {
  it("go to the database together, each claim with its change: every key's card once, its answer replayed the same, here and in another process", async () => {
    const tree = await execute(deaf, owner, createTree, {}, { name: "Keyed together" });
    await create(deaf, tree._id, "first");
    const keys = labels("together", 24);
    let answered: Answered[] = [];
    const atTheirRows = await answersAtTheirRows(owner._id, async () => {
      answered = await Promise.all(keys.map((key) => keyedCreate(deaf, tree._id, key, key)));
      // Kept at once, in this process's memory, then written at the claim's row.
      for (const key of keys) expect(deaf.store.idempotency.known?.(owner._id, key)?.answer).toBeDefined();
      await answersLanded(owner, keys);
    });
    expect([...atTheirRows].filter(([key]) => keys.includes(key)).sort()).toEqual(keys.map((key) => [key, true]).sort());
    expect(answered.every((a) => !a.replayed)).toBe(true);
    expect(answered.map((a) => JSON.parse(a.body).content)).toEqual(keys);
    expect(await contentsOf(tree._id)).toEqual(["first", ...keys].sort());
    const { revisions, perTransaction } = await logOf(tree._id);
    expect(revisions).toEqual(Array.from({ length: 26 }, (_, i) => i + 1));
    // Keyed changes of the one tree in one transaction: a run carrying their claims.
    expect(Math.max(...perTransaction)).toBeGreaterThan(1);
    expect(sent.get("cardtree-run-keyed-commit")).toBeGreaterThan(0);
    // Each key: one record, leading to its one change.
    const kept = await keysOf(owner, keys);
    expect([...kept.keys()].sort()).toEqual([...keys].sort());
    for (const key of keys) expect(kept.get(key)).toEqual({ leadsTo: key, changes: [key] });
    // What a take-over of each key would answer from: its one change, once.
    for (const key of keys) {
      const done = await deaf.store.changes.byKey(owner._id, key, "2000-01-01T00:00:00.000Z");
      expect(done.map((step) => ("change" in step ? [step.step, step.change.after[0].content] : step))).toEqual([[0, key]]);
    }

    // Replayed here (from memory, or the table) and in the other process (the table): the same body, nothing run.
    expect(await Promise.all(keys.map((key) => keyedCreate(deaf, tree._id, key, key)))).toEqual(answered.map((a) => ({ ...a, replayed: true })));
    await answersLanded(owner, keys);
    expect(await Promise.all(keys.map((key) => keyedCreate(other, tree._id, key, key)))).toEqual(answered.map((a) => ({ ...a, replayed: true })));
    expect(await contentsOf(tree._id)).toEqual(["first", ...keys].sort());
    expect((await logOf(tree._id)).revisions).toHaveLength(26);
  });

  it("the same key twice among them: one runs, the other is 409 while it runs, and 422 with another request", async () => {
    const tree = await execute(deaf, owner, createTree, {}, { name: "Keyed twice" });
    await create(deaf, tree._id, "first");
    const writers = labels("among", 10).map((key) => keyedCreate(deaf, tree._id, key, key));
    const first = keyedCreate(deaf, tree._id, "twice", "twice");
    const again = keyedCreate(deaf, tree._id, "twice", "twice");
    const otherRequest = keyedCreate(deaf, tree._id, "twice", "something else");
    await expect(again).rejects.toBeInstanceOf(KeyInFlightError);
    await expect(otherRequest).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    await Promise.all(writers);
    const ran = await first;
    expect(ran.replayed).toBe(false);
    expect(await keyedCreate(deaf, tree._id, "twice", "twice")).toEqual({ ...ran, replayed: true });
    expect(await contentsOf(tree._id)).toEqual(["first", "twice", ...labels("among", 10)].sort());
    expect((await keysOf(owner, ["twice"])).get("twice")).toEqual({ leadsTo: "twice", changes: ["twice"] });
  });

  it("a run carrying a key another process answered already: it is refused whole, then its changes go one by one; that key answers the other's answer, the rest land once", async () => {
    // Three keys run and answered in the other process, before this one keeps the tree: it does not know them.
    const tree = await execute(other, owner, createTree, {}, { name: "Keyed replays" });
    const elsewhere = labels("elsewhere", 3);
    const theirs = await Promise.all(elsewhere.map((key) => keyedCreate(other, tree._id, key, key)));
    await answersLanded(owner, elsewhere);
    await create(deaf, tree._id, "first");
    // The burst's first change goes alone and is held: the others (the three replays among
    // them, which reach their commits) build on it and wait behind it, then go as one run.
    const failedRuns = failed.get("cardtree-run-keyed-commit") ?? 0;
    const held = holdStatement("cardtree-next-keyed-commit");
    const mine = labels("mine", 9);
    const requests = [...mine.slice(0, 4), ...elsewhere, ...mine.slice(4)];
    const from = handed;
    const answering = Promise.all(requests.map((key) => keyedCreate(deaf, tree._id, key, key)));
    await held.reached;
    // Every one of them handed over (ahead, built on the held one) before it goes.
    await handedOver(from, requests.length);
    held.release();
    const answered = new Map((await answering).map((answer, i) => [requests[i], answer]));
    elsewhere.forEach((key, i) => expect(answered.get(key)).toEqual({ ...theirs[i], replayed: true }));
    for (const key of mine) expect(answered.get(key)).toMatchObject({ replayed: false });
    expect(failed.get("cardtree-run-keyed-commit") ?? 0).toBeGreaterThan(failedRuns);
    expect(await contentsOf(tree._id)).toEqual(["first", ...elsewhere, ...mine].sort());
    expect((await logOf(tree._id)).revisions).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    const kept = await keysOf(owner, requests);
    for (const key of requests) expect(kept.get(key)).toEqual({ leadsTo: key, changes: [key] });
  });

  it("a run with keyed writers refused by a kept record changed meanwhile: each runs again from fresh reads, lands once, its key kept once", async () => {
    const writer = await execute(other, null, signUp, {}, { email: "ahead-keyed-writer@example.com", password: "correct horse battery" });
    const tree = await execute(deaf, writer, createTree, {}, { name: "Keyed run refused" });
    await create(deaf, tree._id, "first", writer);
    const stale = staleRuns.get("cardtree-run-keyed-commit") ?? 0;
    // The run behind the next lone commit is held until the writer's row changed under it
    // (an operator's card limit, straight into the row: nobody is told).
    const held = holdStatement("cardtree-run-keyed-commit");
    const keys = labels("refused run", 12);
    const answering = Promise.all(keys.map((key) => keyedCreate(deaf, tree._id, key, key, writer)));
    await held.reached;
    await sql("UPDATE users SET record = (record::jsonb || '{\"limit\": 1000}'::jsonb)::json WHERE id = $1", [writer._id]);
    held.release();
    const answered = await answering;
    expect(answered.map((a) => ({ replayed: a.replayed, content: JSON.parse(a.body).content }))).toEqual(keys.map((content) => ({ replayed: false, content })));
    expect(staleRuns.get("cardtree-run-keyed-commit")).toBe(stale + 1);
    expect(await contentsOf(tree._id)).toEqual(["first", ...keys].sort());
    expect((await logOf(tree._id)).revisions).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    const kept = await keysOf(writer, keys);
    for (const key of keys) expect(kept.get(key)).toEqual({ leadsTo: key, changes: [key] });
    expect(await Promise.all(keys.map((key) => keyedCreate(deaf, tree._id, key, key, writer)))).toEqual(answered.map((a) => ({ ...a, replayed: true })));
  });

  it("the same key sent to another process while this process's run carrying it waits: the key runs once, and both answer its one answer", async () => {
    const tree = await execute(deaf, owner, createTree, {}, { name: "Keyed across" });
    await create(deaf, tree._id, "first");
    const held = holdStatement("cardtree-next-keyed-commit");
    const keys = labels("across", 6);
    const here = Promise.all(keys.map((key) => keyedCreate(deaf, tree._id, key, key)));
    await held.reached;
    // Sent before this process's statements: the other process's change of "across 3" takes
    // the key (and the tree's revision); this process's run is refused and runs again.
    const there = await keyedCreate(other, tree._id, "across 3", "across 3");
    expect(there.replayed).toBe(false);
    held.release();
    const answered = await here;
    expect(answered[3]).toEqual({ ...there, replayed: true });
    expect(answered.filter((a) => a.replayed)).toHaveLength(1);
    expect(await contentsOf(tree._id)).toEqual(["first", ...keys].sort());
    expect((await logOf(tree._id)).revisions).toEqual(Array.from({ length: 8 }, (_, i) => i + 1));
    const kept = await keysOf(owner, keys);
    for (const key of keys) expect(kept.get(key)).toEqual({ leadsTo: key, changes: [key] });
  });

  it("a keyed request's later step, holding its claim, goes in a statement of its own, never in a run: its claim is checked there", async () => {
    const tree = await execute(deaf, owner, createTree, {}, { name: "Held step" });
    await create(deaf, tree._id, "first");
    const start = await startKeyed(deaf, { userId: owner._id, key: "two steps", fingerprint: "two steps" });
    if (!("run" in start)) throw new Error("expected the key to run");
    await start.run.enter(() => create(deaf, tree._id, "step one"));
    // A plain write's statement held; another plain write goes ahead behind it, then the
    // request's second step (it holds its claim) behind that.
    const heldSteps = sent.get("cardtree-next-held-commit") ?? 0;
    const held = holdStatement("cardtree-next-plain-commit");
    const from = handed;
    const writes = [create(deaf, tree._id, "plain one")];
    await held.reached;
    writes.push(create(deaf, tree._id, "plain two"));
    await handedOver(from, 2);
    const stepTwo = start.run.enter(() => create(deaf, tree._id, "step two"));
    await handedOver(from, 3);
    held.release();
    await Promise.all([...writes, stepTwo]);
    await start.run.finish({ status: 200, headers: {}, body: Buffer.from("{}") });
    expect(sent.get("cardtree-next-held-commit")).toBe(heldSteps + 1);
    expect(await contentsOf(tree._id)).toEqual(["first", "plain one", "plain two", "step one", "step two"].sort());
    expect((await keysOf(owner, ["two steps"])).get("two steps")).toEqual({ leadsTo: "step one", changes: ["step one", "step two"] });
  });

  it("a keyed command that commits twice in one step: its second change holds the claim its first carried ahead, never inserts it again", async () => {
    const twoCards = treeCommand({
      name: "twoCards",
      input: z.object({ content: z.string() }),
      action: "write",
      needs: ["store", "clock", "feed"],
      async run(ctx, actor, tree, _target: { treeId: string }, { content }): Promise<StoredCard[]> {
        const card = (suffix: string): StoredCard => ({
          _id: newRecordId(),
          treeId: tree._id,
          parentId: null,
          position: 100,
          content: `${content} ${suffix}`,
          createdAt: ctx.clock.now(),
          updatedAt: ctx.clock.now(),
          author: actor._id,
        });
        const one = await commitChange(ctx, actor, tree, { kind: "card.create", after: [card("one")] });
        const two = await commitChange(ctx, actor, one.tree, { kind: "card.create", after: [card("two")] });
        return [...one.change.after, ...two.change.after];
      },
      replay: (_ctx, change) => change.after,
    });
    const tree = await execute(deaf, owner, createTree, {}, { name: "Twice in a step" });
    await create(deaf, tree._id, "first");
    const start = await startKeyed(deaf, { userId: owner._id, key: "two cards", fingerprint: "two cards" });
    if (!("run" in start)) throw new Error("expected the key to run");
    const made = await start.run.enter(() => execute(deaf, owner, twoCards, { treeId: tree._id }, { content: "pair" }));
    expect(made.map((c) => c.content)).toEqual(["pair one", "pair two"]);
    await start.run.finish({ status: 201, headers: {}, body: Buffer.from("[]") });
    expect(await contentsOf(tree._id)).toEqual(["first", "pair one", "pair two"]);
    const rows = await sql<{ revision: number; claimed: boolean | null; idem: string }>(
      "SELECT revision, idem_claimed AS claimed, idem FROM changes WHERE tree_id = $1 AND idem IS NOT NULL ORDER BY revision",
      [tree._id],
    );
    expect(rows).toEqual([
      { revision: 3, claimed: true, idem: idempotencyId(owner._id, "two cards") },
      { revision: 4, claimed: null, idem: idempotencyId(owner._id, "two cards") },
    ]);
  });
});
