/**
 * Idempotency keys in the domain (src/domain/idempotency.ts), on the in-memory store with
 * a clock of the test's own: a running request's claim is renewed while it runs, so a long
 * request keeps its key; a claim no one renews (its process died) is taken over.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createDomainContext, type DomainContext } from "../../src/domain/context.js";
import { isoAt, LEASE_MS, startKeyed, type RunningKey } from "../../src/domain/idempotency.js";
import { execute } from "../../src/domain/command.js";
import { createCard, updateCard } from "../../src/domain/cards.js";
import { createTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import type { Actor } from "../../src/domain/policy.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import { openMemoryStore } from "../../src/store/memory-store.js";

let ctx: DomainContext;
let now = Date.parse("2026-01-01T00:00:00.000Z");
const request = { userId: "a".repeat(24), key: "long-one", fingerprint: "fp" };
const answer = { status: 201, headers: {}, body: Buffer.from("{}") };

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
  const config = loadConfig({ EXPORT_WORKERS: "0" });
  ctx = createDomainContext(openMemoryStore(), config, {
    formats: formatsOffThread(config.exports),
    hasher: scryptHasherFor(config.limits),
    clock: { now: () => new Date(now).toISOString() },
  });
});
afterEach(() => {
  vi.useRealTimers();
});

async function claimed(): Promise<RunningKey> {
  const start = await startKeyed(ctx, request);
  if (!("run" in start)) throw new Error("expected the key to be claimed");
  return start.run;
}

describe("a running request's claim", () => {
  it("is renewed while the request runs: past its first lease, the key is still in flight", async () => {
    const running = await claimed();
    for (let i = 0; i < 6; i++) {
      now += 10_000;
      await vi.advanceTimersByTimeAsync(10_000);
    }
    // A minute in: twice the lease, renewed all along.
    await expect(startKeyed(ctx, request)).rejects.toMatchObject({ code: "conflict", retryAfterSeconds: 1 });
    await running.finish(answer);
    expect(await startKeyed(ctx, request)).toEqual({ replay: expect.objectContaining({ status: 201 }) });
  });

  it("is renewed by one timer that stops once a renewal finds no key running", async () => {
    const first = await claimed();
    await first.finish(answer);
    // Left set between keys (under load the set empties between most keyed writes).
    expect(vi.getTimerCount()).toBe(1);
    const second = await startKeyed(ctx, { ...request, key: "next-one" });
    if (!("run" in second)) throw new Error("expected the key to be claimed");
    expect(vi.getTimerCount()).toBe(1);
    await second.run.finish(answer);
    now += 10_000;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(vi.getTimerCount()).toBe(0);
    // A key after that sets it again, and is renewed.
    const third = await startKeyed(ctx, { ...request, key: "third-one" });
    expect(vi.getTimerCount()).toBe(1);
    for (let i = 0; i < 6; i++) {
      now += 10_000;
      await vi.advanceTimersByTimeAsync(10_000);
    }
    await expect(startKeyed(ctx, { ...request, key: "third-one" })).rejects.toMatchObject({ code: "conflict" });
    if ("run" in third) await third.run.finish(answer);
  });

  it("not renewed (its process died) is taken over once its lease ends", async () => {
    await claimed();
    vi.clearAllTimers();
    now += LEASE_MS - 1_000;
    await expect(startKeyed(ctx, request)).rejects.toMatchObject({ code: "conflict" });
    now += 2_000;
    const successor = await startKeyed(ctx, request);
    expect("run" in successor).toBe(true);
  });

  it("holds for IDEMPOTENCY_LEASE_MS when set: taken over that long after its process died, renewed while running", async () => {
    const config = loadConfig({ EXPORT_WORKERS: "0", IDEMPOTENCY_LEASE_MS: "3000" });
    const store = openMemoryStore();
    // Two processes on one store: the first dies holding the key, the second takes it over.
    const [first, second] = [0, 1].map(() =>
      createDomainContext(store, config, {
        formats: formatsOffThread(config.exports),
        hasher: scryptHasherFor(config.limits),
        clock: { now: () => new Date(now).toISOString() },
      }),
    );
    expect("run" in (await startKeyed(first, request))).toBe(true);
    vi.clearAllTimers();
    now += 2_000;
    await expect(startKeyed(second, request)).rejects.toMatchObject({ code: "conflict" });
    now += 2_000;
    const successor = await startKeyed(second, request);
    if (!("run" in successor)) throw new Error("expected the dead claim taken over");
    // The successor runs for twice the lease, renewed every second.
    for (let i = 0; i < 6; i++) {
      now += 1_000;
      await vi.advanceTimersByTimeAsync(1_000);
    }
    await expect(startKeyed(first, request)).rejects.toMatchObject({ code: "conflict" });
    await successor.run.finish(answer);
    expect(await startKeyed(first, request)).toEqual({ replay: expect.objectContaining({ status: 201 }) });
  });

  it("with another request's fingerprint is idempotency_key_reused, running or done", async () => {
    const running = await claimed();
    await expect(startKeyed(ctx, { ...request, fingerprint: "other" })).rejects.toMatchObject({ code: "idempotency_key_reused" });
    await running.finish(answer);
    await expect(startKeyed(ctx, { ...request, fingerprint: "other" })).rejects.toMatchObject({ code: "idempotency_key_reused" });
  });

  it("is let go when the answer changed nothing (5xx, 429, GraphQL's internal): the key runs again", async () => {
    for (const [status, codes] of [[500, []], [503, []], [429, []], [200, ["internal"]]] as const) {
      const running = await claimed();
      await running.finish({ ...answer, status }, codes);
      const again = await startKeyed(ctx, request);
      expect("run" in again, `${status} ${codes.join()}`).toBe(true);
      if ("run" in again) await again.run.finish({ ...answer, status: 500 });
    }
  });

  it("keeps an answer too large to keep as a 409 saying the request was done", async () => {
    const running = await claimed();
    await running.finish({ status: 201, headers: { "content-type": "application/json" }, body: Buffer.alloc(2 * 1024 * 1024, 0x20) });
    const replay = await startKeyed(ctx, request);
    if (!("replay" in replay)) throw new Error("expected a replay");
    expect(replay.replay.status).toBe(409);
    expect(JSON.parse(Buffer.from(replay.replay.body).toString())).toMatchObject({ error: "conflict", message: expect.stringContaining("answered 201") });
  });
});

describe("a run that committed and died before its answer was kept", () => {
  /** A user whose requests are keyed, a tree of theirs, and the key's request as theirs. */
  async function writer() {
    const alice: Actor = await execute(ctx, null, signUp, {}, { email: "alice@example.com", password: "correct horse battery" });
    const tree = await execute(ctx, alice, createTree, {}, { name: "Tree" });
    return { alice, tree, keyed: { ...request, userId: alice._id } };
  }

  /** The claim's process dies: no renewal, no answer; the lease runs out. */
  function dies() {
    vi.clearAllTimers();
    now += LEASE_MS + 1_000;
  }

  /** A keyed run that creates a card and dies before keeping its answer; then the claim the retry takes over. */
  async function createdThenDied(content: string) {
    const { alice, tree, keyed } = await writer();
    const body = { treeId: tree._id, position: 1, content };
    const first = await startKeyed(ctx, keyed);
    if (!("run" in first)) throw new Error("expected a claim");
    const made = await first.run.enter(() => execute(ctx, alice, createCard, { treeId: tree._id }, body));
    dies();
    const successor = await startKeyed(ctx, keyed);
    if (!("run" in successor)) throw new Error("expected a take-over");
    return { alice, tree, body, made, successor: successor.run };
  }

  it("is taken over, and the request answers from its change instead of running again", async () => {
    const { alice, tree, body, made, successor } = await createdThenDied("once");
    expect(successor.answersFromCommitted).toBe(true);
    const again = await successor.enter(() => execute(ctx, alice, createCard, { treeId: tree._id }, body));
    expect(again).toEqual(made);
    expect((await ctx.store.cards.liveByTree(tree._id)).filter((c) => c.content === "once")).toHaveLength(1);
  });

  it("answers each committed step from its change and runs the steps that had not committed", async () => {
    const { alice, tree, body, made, successor } = await createdThenDied("first");
    const [again, edited] = await successor.enter(async () => [
      await execute(ctx, alice, createCard, { treeId: tree._id }, body),
      await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: made._id }, { content: "then" }),
    ]);
    expect(again).toEqual(made);
    expect(edited).toMatchObject({ _id: made._id, content: "then", __v: 1 });
    expect((await ctx.store.cards.liveByTree(tree._id)).filter((c) => c.content !== "")).toEqual([expect.objectContaining({ content: "then" })]);
  });

  it("is not let go by a 5xx after a commit: its claim lapses, and the retry answers from the change", async () => {
    const { alice, tree, keyed } = await writer();
    const body = { treeId: tree._id, position: 1, content: "kept" };
    const first = await startKeyed(ctx, keyed);
    if (!("run" in first)) throw new Error("expected a claim");
    await first.run.enter(() => execute(ctx, alice, createCard, { treeId: tree._id }, body));
    await first.run.finish({ ...answer, status: 503 });
    await expect(startKeyed(ctx, keyed)).rejects.toMatchObject({ code: "conflict" });
    now += LEASE_MS + 1_000;
    const successor = await startKeyed(ctx, keyed);
    expect("run" in successor && successor.run.answersFromCommitted).toBe(true);
  });
});

describe("a key's times (isoAt)", () => {
  it("are written as toISOString writes them: across days, within one day, at the ends of the range", () => {
    const start = Date.parse("2026-11-27T23:59:58.990Z");
    const times = [0, 1, 999, 1_000, 86_399_999, 86_400_000, 951_782_400_000, 253_402_300_799_999, -1, 253_402_300_800_000];
    for (let ms = start; ms < start + 3_000; ms += 7) times.push(ms);
    for (let i = 0; i < 2_000; i++) times.push(Math.floor(((i * 7_919) % 2_000) * 126_701_150_400 + i));
    for (const ms of times) expect(isoAt(ms)).toBe(new Date(ms).toISOString());
    expect(() => isoAt(Number.NaN)).toThrow(RangeError);
  });
});
