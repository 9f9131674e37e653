/**
 * Client-chosen ids (SPEC §13) in the domain, on the in-memory store: creations of one id
 * started together in two trees make one card (or tree), the others are refused.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { execute } from "../../src/domain/command.js";
import { createCard } from "../../src/domain/cards.js";
import { createDomainContext, type DomainContext } from "../../src/domain/context.js";
import type { Actor } from "../../src/domain/policy.js";
import { createTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import { newRecordId } from "../../src/shared/ids.js";
import { openMemoryStore } from "../../src/store/memory-store.js";

let ctx: DomainContext;
let alice: Actor;

beforeEach(async () => {
  const config = loadConfig({ SIGNUP: "open", EXPORT_WORKERS: "0" });
  ctx = createDomainContext(openMemoryStore(), config, { formats: formatsOffThread(config.exports), hasher: scryptHasherFor(config.limits) });
  alice = await execute(ctx, null, signUp, {}, { email: "alice@example.com", password: "correct horse battery" });
});

describe("one client-chosen id, created at once in several places", () => {
  it("cards in two trees: one is made, the others are conflict, and no card changes tree", async () => {
    const a = await execute(ctx, alice, createTree, {}, { name: "A" });
    const b = await execute(ctx, alice, createTree, {}, { name: "B" });
    const _id = newRecordId();
    const outcomes = await Promise.allSettled(
      [a, b, a, b].map((tree) => execute(ctx, alice, createCard, { treeId: tree._id }, { _id, treeId: tree._id, position: 1, content: tree.name })),
    );
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toMatchObject({ code: "conflict" });
    const stored = await ctx.store.cards.byId(_id);
    const holder = stored!.treeId === a._id ? a : b;
    expect(stored!.content).toBe(holder.name);
    const changesTouching = [
      ...(await ctx.store.changes.ofCard(a._id, _id, 10)),
      ...(await ctx.store.changes.ofCard(b._id, _id, 10)),
    ];
    expect(changesTouching).toHaveLength(1);
  });

  it("trees: one is made, the others are conflict", async () => {
    const _id = newRecordId();
    const outcomes = await Promise.allSettled(
      ["one", "two", "three"].map((name) => execute(ctx, alice, createTree, {}, { _id, name })),
    );
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    const made = outcomes.find((o) => o.status === "fulfilled")!.value;
    expect((await ctx.store.trees.byId(_id))!.name).toBe(made.name);
    expect(await ctx.store.changes.since(_id, 0, 10)).toHaveLength(1);
  });
});
