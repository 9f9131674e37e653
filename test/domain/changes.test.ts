/**
 * The domain's commands against the Store port, on the in-memory store: what a change
 * records for each kind of write (SPEC §10), with no server and no data directory.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { execute } from "../../src/domain/command.js";
import { createCard, deleteCard, updateCard } from "../../src/domain/cards.js";
import { addCollaborator } from "../../src/domain/collaborators.js";
import { createDomainContext, type DomainContext } from "../../src/domain/context.js";
import { importSeed } from "../../src/domain/import.js";
import type { Actor } from "../../src/domain/policy.js";
import { createTree, updateTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import type { Change } from "../../src/shared/changes.js";
import { openMemoryStore } from "../../src/store/memory-store.js";

let ctx: DomainContext;
let alice: Actor;
let published: Change[];

beforeEach(async () => {
  const config = loadConfig({ SIGNUP: "open", EXPORT_WORKERS: "0" });
  ctx = createDomainContext(openMemoryStore(), config, { formats: formatsOffThread(config.exports), hasher: scryptHasherFor(config.limits) });
  published = [];
  ctx.feed.subscribeAll((notice) => published.push(notice.change!));
  alice = await execute(ctx, null, signUp, {}, { email: "alice@example.com", password: "correct horse battery" });
});

async function log(treeId: string): Promise<Change[]> {
  return ctx.store.changes.since(treeId, 0, 1000);
}

describe("every write to a tree is one change", () => {
  it("numbers a tree's changes 1, 2, 3 and publishes each once it is stored", async () => {
    const tree = await execute(ctx, alice, createTree, {}, { name: "Novel", seed: "# One\n\n# Two" });
    expect(tree.revision).toBe(1);
    const [first] = await ctx.store.cards.liveByTree(tree._id);
    const card = await execute(ctx, alice, createCard, { treeId: tree._id }, { treeId: tree._id, parentId: first._id, position: 0, content: "child" });
    await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: card._id }, { content: "child, edited" });
    const changes = await log(tree._id);
    expect(changes.map((c) => [c.revision, c.kind, c.userId])).toEqual([
      [1, "tree.create", alice._id],
      [2, "card.create", alice._id],
      [3, "card.update", alice._id],
    ]);
    expect(published.map((c) => c.revision)).toEqual([1, 2, 3]);
    expect((await ctx.store.trees.byId(tree._id))?.revision).toBe(3);
  });

  it("versions the cards it touches: 0 when created, +1 on each change of the card alone", async () => {
    const tree = await execute(ctx, alice, createTree, {}, { name: "T" });
    const card = await execute(ctx, alice, createCard, { treeId: tree._id }, { treeId: tree._id, parentId: null, position: 1, content: "a" });
    expect(card.__v).toBe(0);
    const edited = await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: card._id }, { content: "b" });
    const moved = await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: card._id }, { position: 5 });
    expect([edited.__v, moved.__v]).toEqual([1, 2]);
    const [, , edit, move] = await log(tree._id);
    expect(edit.before).toMatchObject([{ content: "a", __v: 0 }]);
    expect(edit.after).toMatchObject([{ content: "b", __v: 1 }]);
    expect(move.kind).toBe("card.move");
    // An edit that changes nothing is no change.
    await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: card._id }, { content: "b" });
    expect(await log(tree._id)).toHaveLength(4);
  });

  it("records a deleted subtree before and after, and an import as the cards it made", async () => {
    const tree = await execute(ctx, alice, createTree, {}, { name: "T", seed: "# A\n\n## A1\n\n### A11\n\n# B" });
    const [a] = (await ctx.store.cards.liveByTree(tree._id)).filter((c) => c.content === "# A");
    const deleted = await execute(ctx, alice, deleteCard, { treeId: tree._id, cardId: a._id }, undefined);
    expect(deleted).toHaveLength(3);
    const del = (await log(tree._id)).at(-1)!;
    expect(del.kind).toBe("card.delete");
    expect(del.before.map((c) => c.trashed)).toEqual([undefined, undefined, undefined]);
    expect(del.after.every((c) => c.trashed === del.at)).toBe(true);
    expect(await ctx.store.cards.trashedByTree(tree._id)).toHaveLength(3);

    const made = await execute(ctx, alice, importSeed, { treeId: tree._id }, { seed: "# C\n\n# D" });
    const imp = (await log(tree._id)).at(-1)!;
    expect(imp).toMatchObject({ kind: "import", before: [] });
    expect(imp.after.map((c) => c._id)).toEqual(made.map((c) => c._id));
  });

  it("records the tree record's own changes with the tree before and after", async () => {
    const bob = await execute(ctx, null, signUp, {}, { email: "bob@example.com", password: "correct horse battery" });
    const tree = await execute(ctx, alice, createTree, {}, { name: "Before" });
    await execute(ctx, alice, updateTree, { treeId: tree._id }, { name: "After" });
    await execute(ctx, alice, addCollaborator, { treeId: tree._id }, { email: "bob@example.com" });
    const [, rename, share] = await log(tree._id);
    expect(rename).toMatchObject({ kind: "tree.update", tree: { before: { name: "Before" }, after: { name: "After" } } });
    expect(share.kind).toBe("tree.share");
    expect(share.tree?.after.users).toEqual([alice._id, bob._id]);
  });

  it("a write that fails its checks is no change at all", async () => {
    const tree = await execute(ctx, alice, createTree, {}, { name: "T" });
    await expect(
      execute(ctx, alice, createCard, { treeId: tree._id }, { treeId: tree._id, parentId: "x".repeat(24), position: 0, content: "orphan" }),
    ).rejects.toThrow(/parent/);
    expect(await log(tree._id)).toHaveLength(1);
    expect(published).toHaveLength(1);
  });
});

describe("the store takes a revision once", () => {
  it("refuses a second change with a revision already written, and writes nothing of it", async () => {
    const tree = await execute(ctx, alice, createTree, {}, { name: "T" });
    const stored = (await ctx.store.trees.byId(tree._id))!;
    const [card] = await ctx.store.cards.liveByTree(tree._id);
    const stale: Change = {
      treeId: tree._id,
      revision: 1,
      at: new Date().toISOString(),
      userId: alice._id,
      kind: "card.update",
      before: [card],
      after: [{ ...card, content: "lost race" }],
    };
    await expect(ctx.store.changes.commit(stale, { ...stored, revision: 1 })).rejects.toMatchObject({ code: "conflict" });
    expect((await ctx.store.cards.liveById(card._id))?.content).toBe("");
  });
});

describe("the clock port", () => {
  it("stamps what the commands write with the context's clock", async () => {
    const config = loadConfig({ SIGNUP: "open", EXPORT_WORKERS: "0" });
    let tick = 0;
    const clock = { now: () => new Date(Date.UTC(2030, 0, 1, 0, 0, tick++)).toISOString() };
    const fixed = createDomainContext(openMemoryStore(), config, {
      formats: formatsOffThread(config.exports),
      hasher: scryptHasherFor(config.limits),
      clock,
    });
    await fixed.store.users.insert((await ctx.store.users.byId(alice._id))!);
    const tree = await execute(fixed, alice, createTree, {}, { name: "Timed" });
    const [card] = await fixed.store.cards.liveByTree(tree._id);
    await execute(fixed, alice, updateCard, { treeId: tree._id, cardId: card._id }, { content: "later" });
    const [create, edit] = await fixed.store.changes.since(tree._id, 0, 10);
    expect([tree.createdAt, card.createdAt, create.at]).toEqual(Array(3).fill("2030-01-01T00:00:00.000Z"));
    expect(edit.at).toBe("2030-01-01T00:00:01.000Z");
    expect((await fixed.store.cards.liveById(card._id))?.updatedAt).toBe("2030-01-01T00:00:01.000Z");
  });
});
