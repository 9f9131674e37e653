/**
 * A dead process's Idempotency-Key claims are dead at once on PostgreSQL (issue 26;
 * docs/decisions.md, "A dead process's claims, dead at once"): a claim names the process
 * that made it, which holds a liveness lock on each of its connections
 * (src/store/postgres/liveness.ts). All of this runs with the production lease (30 s): a
 * retry after a crash is answered within seconds, a running claim of a live process is not
 * taken over, and a process that loses its liveness connection commits nothing more under
 * the claims it made before.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createCard } from "../../src/domain/cards.js";
import { execute } from "../../src/domain/command.js";
import { createDomainContext, type DomainContext } from "../../src/domain/context.js";
import { LEASE_MS, startKeyed, type RunningKey } from "../../src/domain/idempotency.js";
import type { Actor } from "../../src/domain/policy.js";
import { createTree, deleteTree } from "../../src/domain/trees.js";
import { setPreferences } from "../../src/domain/preferences.js";
import { signUp } from "../../src/domain/users.js";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres-store.js";
import { KeyAnsweredError } from "../../src/shared/errors.js";
import { Api, buildTree, buildUser, retryUntilAnswered } from "../helpers/api.js";
import { adminQuery, createTestDatabase } from "../helpers/postgres.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

const HELD = "fault: holding an answer before keeping it";

let databaseUrl: string;
let b: TestServer;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  b = await startTestServer({ env: { STORE: "postgres", DATABASE_URL: databaseUrl } });
});

afterAll(async () => {
  await b?.stop();
});

async function sql(query: string, params: unknown[] = []): Promise<any[]> {
  return (await adminQuery(query, databaseUrl, params)).rows;
}

/** Process A: a server on the same database whose next keyed answer can be held (CARDTREE_FAULTS_FILE). */
async function startA(): Promise<{ a: TestServer; control: string }> {
  const control = path.join(os.tmpdir(), `cardtree-dead-claims-${process.pid}-${Date.now()}`);
  const a = await startTestServer({ env: { STORE: "postgres", DATABASE_URL: databaseUrl, CARDTREE_FAULTS_FILE: control } });
  return { a, control };
}

/**
 * Sends `send` on A with its answer held: resolves once A has committed and holds it (its
 * claim running), to what became of the request, in an object (a promise would be awaited).
 */
async function heldOnA(a: TestServer, control: string, send: () => Promise<unknown>): Promise<{ outcome: Promise<string> }> {
  await writeFile(control, "hold-answer");
  const outcome = send().then(
    () => "answered",
    () => "lost",
  );
  await vi.waitFor(() => expect(a.output.some((line) => line.includes(HELD))).toBe(true), { timeout: 20_000, interval: 20 });
  return { outcome };
}

describe("a dead process's claim on PostgreSQL, with the 30 s lease", { timeout: 90_000 }, () => {
  it("killed after committing a keyed creation, before keeping its answer: the retry on B answers the card within seconds, replayed, and one card exists", async () => {
    const { a, control } = await startA();
    try {
      const alice = await buildUser(a.url);
      const tree = await buildTree(alice);
      const body = { treeId: tree._id, position: 1, content: "committed, then killed" };
      const key = { "Idempotency-Key": "killed-after-commit" };
      const { outcome: lost } = await heldOnA(a, control, () => alice.post(`/api/trees/${tree._id}/cards`, body, key));
      await a.kill();
      expect(await lost).toBe("lost");
      // By its lease, A's claim would hold for most of 30 s yet.
      const [claim] = await sql("SELECT claim, lease_until FROM idempotency_keys WHERE user_id = $1", [alice.user._id]);
      expect(claim.claim).not.toBeNull();
      expect(Date.parse(claim.lease_until) - Date.now()).toBeGreaterThan(20_000);

      const onB = new Api(b.url, alice.credentials);
      const { reply, tookMs } = await retryUntilAnswered(() => onB.post(`/api/trees/${tree._id}/cards`, body, key), 3_000);
      expect([reply.status, reply.headers.get("idempotent-replayed")]).toEqual([201, "true"]);
      expect(tookMs).toBeLessThan(3_000);
      const made = (await onB.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === body.content);
      expect(made).toEqual([reply.body]);
    } finally {
      await a.kill();
    }
  });

  it("of a live process is not taken over: the same key on B is 409 with Retry-After while A runs it, and answered once A is killed", async () => {
    const { a, control } = await startA();
    try {
      const alice = await buildUser(a.url);
      const tree = await buildTree(alice);
      const body = { treeId: tree._id, position: 1, content: "A still runs it" };
      const key = { "Idempotency-Key": "live-owner" };
      const { outcome: held } = await heldOnA(a, control, () => alice.post(`/api/trees/${tree._id}/cards`, body, key));
      const [before] = await sql("SELECT claim FROM idempotency_keys WHERE user_id = $1", [alice.user._id]);

      const onB = new Api(b.url, alice.credentials);
      for (let i = 0; i < 2; i++) {
        const refused = await onB.post(`/api/trees/${tree._id}/cards`, body, key);
        expect([refused.status, refused.body.error, refused.headers.get("retry-after")]).toEqual([409, "conflict", "1"]);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      expect(await sql("SELECT claim FROM idempotency_keys WHERE user_id = $1", [alice.user._id])).toEqual([before]);
      expect((await onB.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === body.content)).toHaveLength(1);

      await a.kill();
      expect(await held).toBe("lost");
      const { reply } = await retryUntilAnswered(() => onB.post(`/api/trees/${tree._id}/cards`, body, key), 3_000);
      expect([reply.status, reply.headers.get("idempotent-replayed")]).toEqual([201, "true"]);
      expect((await onB.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === body.content)).toEqual([reply.body]);
    } finally {
      await a.kill();
    }
  });
});

describe("a live process's own claims (stores in this process, on one database)", { timeout: 90_000 }, () => {
  const config = loadConfig({ EXPORT_WORKERS: "0" });
  const open = async (clock?: { now(): string }): Promise<{ store: PostgresStore; ctx: DomainContext }> => {
    const store = await openPostgresStore(databaseUrl, { log: () => undefined });
    const ctx = createDomainContext(store, config, { formats: formatsOffThread(config.exports), hasher: scryptHasherFor(config.limits), clock });
    return { store, ctx };
  };
  /** The ids a claim names: its process's (which every connection of it locks) and its dedicated connection's. */
  const ownerOf = (claim: string) => /^([0-9a-f]{32})\./.exec(claim)?.[1];
  /** Ends the dedicated (liveness) connection of the process `owner` names, as the database would. */
  const endLiveness = (owner: string) =>
    sql(
      `SELECT pg_terminate_backend(a.pid) AS ended FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
       WHERE a.application_name = 'cardtree-liveness' AND l.locktype = 'advisory' AND l.objsubid = 1
         AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1, 0)`,
      [`cardtree:instance:${owner.slice(0, 16)}`],
    );

  /** A keyed run: what the HTTP layer does around a request's commands. */
  async function keyedRun(ctx: DomainContext, userId: string): Promise<RunningKey> {
    const start = await startKeyed(ctx, { userId, key: "two-steps", fingerprint: "two cards" });
    if (!("run" in start)) throw new Error("expected the key to run");
    return start.run;
  }

  /**
   * Process A's keyed request commits its first step (claiming the key with it), then A's
   * liveness connection is ended by the database (an administrator, that backend restarted)
   * and A notices. The request goes on (`onA`).
   */
  async function stepOneThenLivenessLost(processA: { store: PostgresStore; ctx: DomainContext }, email: string) {
    const alice: Actor = await execute(processA.ctx, null, signUp, {}, { email, password: "correct horse battery" });
    const tree = await execute(processA.ctx, alice, createTree, {}, { name: "Two steps" });
    const step = (ctx: DomainContext, content: string) => execute(ctx, alice, createCard, { treeId: tree._id }, { treeId: tree._id, position: 1, content });
    const onA = await keyedRun(processA.ctx, alice._id);
    const first = await onA.enter(() => step(processA.ctx, "step one"));
    const [{ claim }] = await sql("SELECT claim FROM idempotency_keys WHERE user_id = $1", [alice._id]);
    const owner = ownerOf(claim)!;
    expect(owner).toBeDefined();

    expect(await endLiveness(owner)).toEqual([{ ended: true }]);
    await vi.waitFor(() => expect(processA.store.idempotency.holds!(claim)).toBe(false), { timeout: 5_000, interval: 20 });
    // Until it holds a fresh id's lock, its new claims name no process: only their lease ends them.
    expect(ownerOf(processA.store.idempotency.claimToken!())).toBeUndefined();
    return { alice, tree, step, first, owner, onA };
  }

  it("commits nothing more under its claims, keeps them alive by its other connections, and they are dead once it has none", async () => {
    const processA = await open();
    const processB = await open();
    try {
      const { alice, tree, step, first, owner, onA } = await stepOneThenLivenessLost(processA, "liveness@example.com");
      // Another process may take the claim over now: committing under it could apply the request twice.
      await expect(onA.enter(() => step(processA.ctx, "step two"))).rejects.toMatchObject({ code: "unavailable" });
      await onA.finish({ status: 503, headers: {}, body: Buffer.from("{}") });
      expect((await processA.store.cards.liveByTree(tree._id)).map((c) => c.content).filter((c) => c !== "")).toEqual(["step one"]);
      // A takes a fresh id for its new claims, never the lost one.
      await vi.waitFor(() => expect(ownerOf(processA.store.idempotency.claimToken!())).toMatch(/^[0-9a-f]{32}$/), { timeout: 5_000, interval: 20 });
      expect(ownerOf(processA.store.idempotency.claimToken!())).not.toBe(owner);

      // A lives, with connections that could still be committing: B does not take the claim over.
      const refusedOnB = await keyedRun(processB.ctx, alice._id);
      await expect(refusedOnB.enter(() => step(processB.ctx, "step one"))).rejects.toBeInstanceOf(KeyAnsweredError);
      expect(await refusedOnB.finish({ status: 201, headers: {}, body: Buffer.from("{}") })).toEqual({ refuse: expect.objectContaining({ code: "conflict" }) });

      // A ends (every connection gone): B takes the claim over at once, answers step one from
      // A's change, and runs step two, which A never committed.
      await processA.store.close();
      const onB = await keyedRun(processB.ctx, alice._id);
      const [again, second] = await onB.enter(async () => [await step(processB.ctx, "step one"), await step(processB.ctx, "step two")]);
      expect(again).toEqual(first);
      expect(second).toMatchObject({ content: "step two" });
      await onB.finish({ status: 201, headers: {}, body: Buffer.from("{}") });
      const contents = (await processB.store.cards.liveByTree(tree._id)).map((c) => c.content).filter((c) => c !== "");
      expect(contents.sort()).toEqual(["step one", "step two"]);
    } finally {
      await processA.store.close();
      await processB.store.close();
    }
  });

  it("after its dedicated connection was lost once, a claim made since is not taken over while a commit under it waits in the database, even when that connection is lost again", async () => {
    const processA = await open();
    const processB = await open();
    const blocker = new pg.Client({ connectionString: databaseUrl });
    await blocker.connect();
    try {
      const alice: Actor = await execute(processA.ctx, null, signUp, {}, { email: "lost-twice@example.com", password: "correct horse battery" });
      const t1 = await execute(processA.ctx, alice, createTree, {}, { name: "One" });
      const t2 = await execute(processA.ctx, alice, createTree, {}, { name: "Two" });
      // A's pool has several connections, opened before its dedicated connection is lost.
      await Promise.all(Array.from({ length: 6 }, () => processA.store.users.list()));
      const before = ownerOf(processA.store.idempotency.claimToken!())!;
      expect(await endLiveness(before)).toEqual([{ ended: true }]);
      await vi.waitFor(() => expect(ownerOf(processA.store.idempotency.claimToken!()) ?? before).not.toBe(before), { timeout: 5_000, interval: 20 });

      const step = (ctx: DomainContext, treeId: string, content: string) => execute(ctx, alice, createCard, { treeId }, { treeId, position: 1, content });
      const onA = await keyedRun(processA.ctx, alice._id);
      let committing!: Promise<unknown>;
      const done = onA.enter(async () => {
        await step(processA.ctx, t1._id, "step one");
        // Step two's commit waits in the database on the tree's row, held by another session.
        await blocker.query("BEGIN");
        await blocker.query("SELECT 1 FROM trees WHERE id = $1 FOR UPDATE", [t2._id]);
        committing = step(processA.ctx, t2._id, "step two");
        return committing;
      });
      await vi.waitFor(() => expect(committing).toBeDefined(), { timeout: 5_000, interval: 20 });
      const [{ claim }] = await sql("SELECT claim FROM idempotency_keys WHERE user_id = $1", [alice._id]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // The dedicated connection goes again while step two's commit waits on a pool connection.
      expect(await endLiveness(ownerOf(claim)!)).toEqual([{ ended: true }]);
      await vi.waitFor(() => expect(processA.store.idempotency.holds!(claim)).toBe(false), { timeout: 5_000, interval: 20 });
      // A's connections live: B does not take the claim over.
      const onB = await keyedRun(processB.ctx, alice._id);
      await expect(onB.enter(() => step(processB.ctx, t1._id, "step one"))).rejects.toBeInstanceOf(KeyAnsweredError);
      await onB.finish({ status: 201, headers: {}, body: Buffer.from("{}") });
      await blocker.query("COMMIT");
      await done.catch(() => undefined);
      await onA.finish({ status: 201, headers: {}, body: Buffer.from("{}") });
      const contents = (await processB.store.cards.liveByTree(t2._id)).map((c) => c.content).filter((c) => c !== "");
      expect(contents).toEqual(["step two"]);
    } finally {
      await blocker.end().catch(() => undefined);
      await processA.store.close();
      await processB.store.close();
    }
  });

  it("runs no later step that is not a change (preferences) under such a claim: it is refused before it writes", async () => {
    const processA = await open();
    try {
      const { alice, tree, onA } = await stepOneThenLivenessLost(processA, "no-theme@example.com");
      // Preferences are written by an update of the user's row, which carries no claim check of
      // its own: the step asks first whether the claim is still this process's (renewNow).
      const darkTheme = () => execute(processA.ctx, alice, setPreferences, { userId: alice._id }, { theme: "dark" });
      await expect(onA.enter(darkTheme)).rejects.toMatchObject({ code: "unavailable" });
      await onA.finish({ status: 503, headers: {}, body: Buffer.from("{}") });
      expect((await processA.store.users.byId(alice._id))?.preferences?.theme).not.toBe("dark");
      expect((await processA.store.cards.liveByTree(tree._id)).map((c) => c.content).filter((c) => c !== "")).toEqual(["step one"]);
    } finally {
      await processA.store.close();
    }
  });

  it("removes no tree under such a claim either, and its own retry after the lease answers the committed step and runs the rest", async () => {
    let later = 0;
    const processA = await open({ now: () => new Date(Date.now() + later).toISOString() });
    try {
      const { alice, tree, step, first, onA } = await stepOneThenLivenessLost(processA, "own-retry@example.com");
      const removeTree = () => execute(processA.ctx, alice, deleteTree, { treeId: tree._id }, {});
      await expect(onA.enter(removeTree)).rejects.toMatchObject({ code: "unavailable" });
      await onA.finish({ status: 503, headers: {}, body: Buffer.from("{}") });
      expect(await processA.store.trees.byId(tree._id)).not.toBeNull();

      // The claim's lease ends (A's clock moves past it rather than the test waiting).
      later = LEASE_MS + 1_000;
      const again = await keyedRun(processA.ctx, alice._id);
      const [one] = await again.enter(async () => [await step(processA.ctx, "step one"), await removeTree()]);
      await again.finish({ status: 201, headers: {}, body: Buffer.from("{}") });
      expect(one).toEqual(first);
      expect(await processA.store.trees.byId(tree._id)).toBeNull();
    } finally {
      await processA.store.close();
    }
  });
});
