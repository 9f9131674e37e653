/**
 * The read model patched from changes (issue 14): after edits in place, the cards body is the
 * previous body with the edited cards' bytes swapped; after moves, creations and deletions it
 * is rebuilt. Either way it must equal, byte for byte, a snapshot built from the store at
 * the same revision, and the outline's shape must be the one the cards' places describe.
 */
import { beforeEach, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import { execute } from "../../src/domain/command.js";
import { createCard, deleteCard, updateCard } from "../../src/domain/cards.js";
import { createDomainContext, type DomainContext } from "../../src/domain/context.js";
import type { Actor } from "../../src/domain/policy.js";
import { TreeSnapshot } from "../../src/domain/read-model.js";
import { importSeed } from "../../src/domain/import.js";
import { createTree, updateTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import { openMemoryStore } from "../../src/store/memory-store.js";

let ctx: DomainContext;
let alice: Actor;

beforeEach(async () => {
  const config = loadConfig({ SIGNUP: "open", EXPORT_WORKERS: "0" });
  ctx = createDomainContext(openMemoryStore(), config, { formats: formatsOffThread(config.exports), hasher: scryptHasherFor(config.limits) });
  alice = await execute(ctx, null, signUp, {}, { email: "alice@example.com", password: "correct horse battery" });
});

const SEED = JSON.stringify(
  Array.from({ length: 6 }, (_, i) => ({
    content: `# Part ${i}`,
    children: Array.from({ length: 4 }, (_, j) => ({ content: `part ${i}.${j} "quoted" é`, children: [{ content: `leaf ${i}.${j}` }] })),
  })),
);

/** The model's snapshot at the tree's current revision, and one built from the store at it. */
async function both(treeId: string) {
  const tree = (await ctx.store.trees.byId(treeId))!;
  const model = await ctx.readModel.read(tree);
  const fresh = TreeSnapshot.of(tree, await ctx.store.cards.liveByTree(treeId));
  expect(model.revision).toBe(tree.revision);
  return { model, fresh };
}

function expectSame(model: TreeSnapshot, fresh: TreeSnapshot) {
  expect(model.json().body.toString()).toBe(fresh.json().body.toString());
  expect(model.json().etag).toBe(fresh.json().etag);
  expect(JSON.parse(model.json().body.toString())).toEqual(fresh.places().cards);
  const shape = model.shape();
  const places = fresh.places();
  expect(shape.rootCount).toBe(places.children.get(null)?.length ?? 0);
  model.ordered.forEach((entry, i) => {
    expect(shape.childCount[i]).toBe(places.children.get(entry.card._id)?.length ?? 0);
    // The subtree ends where the next card at the same depth or shallower stands.
    const next = model.ordered.findIndex((other, j) => j > i && other.depth <= entry.depth);
    expect(shape.end[i]).toBe(next === -1 ? model.ordered.length : next);
  });
}

it("an edit in place, several at once, a rename, a move, a new card and a deletion all give the store's body", async () => {
  const tree = await execute(ctx, alice, createTree, {}, { name: "Patched", seed: SEED });
  let { model, fresh } = await both(tree._id);
  expectSame(model, fresh);
  const cards = model.places().cards;

  // One edit, longer and then shorter than before, at the start, middle and end of the body.
  for (const [i, content] of [[0, "x".repeat(500)], [17, "é"], [cards.length - 1, ""], [17, 'a "longer" one\n']] as const) {
    await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: cards[i]._id }, { content });
    ({ model, fresh } = await both(tree._id));
    expectSame(model, fresh);
  }

  // Several changes heard before the next read: patched from the last body made.
  await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: cards[3]._id }, { content: "three" });
  await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: cards[9]._id }, { content: "nine" });
  await execute(ctx, alice, updateTree, { treeId: tree._id }, { name: "Renamed" });
  await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: cards[3]._id }, { content: "three again" });
  ({ model, fresh } = await both(tree._id));
  expectSame(model, fresh);

  // A move, a new card and a deletion re-walk the order; an edit after them patches again.
  await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: cards[5]._id }, { parentId: cards[0]._id, position: 99 });
  ({ model, fresh } = await both(tree._id));
  expectSame(model, fresh);
  await execute(ctx, alice, createCard, { treeId: tree._id }, { treeId: tree._id, parentId: cards[1]._id, content: "new", position: -1 });
  await execute(ctx, alice, deleteCard, { treeId: tree._id, cardId: cards[20]._id }, undefined);
  ({ model, fresh } = await both(tree._id));
  expectSame(model, fresh);
  await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: cards[2]._id }, { content: "after the re-walk" });
  ({ model, fresh } = await both(tree._id));
  expectSame(model, fresh);

  // An edit in place and then a move, heard together: the re-walked body copies the cards
  // that are still the same records from the last body made, and serializes the rest.
  await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: cards[4]._id }, { content: "edited, then others moved" });
  await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: cards[6]._id }, { parentId: cards[1]._id, position: -5 });
  ({ model, fresh } = await both(tree._id));
  expectSame(model, fresh);
});

it("a reader arriving after many changes, some rearranging, gets the store's body (applied at once, one walk)", async () => {
  const tree = await execute(ctx, alice, createTree, {}, { name: "Busy", seed: SEED });
  const cards = await ctx.store.cards.liveByTree(tree._id);
  await both(tree._id); // the model holds the tree from here; what follows is heard, not read
  const made: string[] = [];
  for (let i = 0; i < 60; i++) {
    const parentId = i % 2 === 0 ? null : made[made.length - 1];
    made.push((await execute(ctx, alice, createCard, { treeId: tree._id }, { treeId: tree._id, parentId, content: `new ${i}`, position: 100 - i }))._id);
    if (i % 7 === 0) await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: cards[i % 5]._id }, { content: `edit ${i}` });
    if (i % 11 === 5) await execute(ctx, alice, deleteCard, { treeId: tree._id, cardId: made[i - 1] }, undefined);
  }
  await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: cards[1]._id }, { content: "an edit in place last" });
  const { model, fresh } = await both(tree._id);
  expectSame(model, fresh);
});

it("a tree written in bulk is prepared once the writes pause, with the edit after them; lone edits are left to the next read", async () => {
  const prepared: TreeSnapshot[] = [];
  ctx.readModel.prepareAfterBulkWrites((snapshot) => {
    snapshot.json();
    prepared.push(snapshot);
  });
  const tree = await execute(ctx, alice, createTree, {}, { name: "Bulk", seed: SEED });
  const quiet = await execute(ctx, alice, createTree, {}, { name: "Quiet", seed: SEED });
  await both(tree._id);
  await both(quiet._id);
  // An import of 1,200 cards, prepared once it is done.
  const seed = JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ content: `part ${i}`, children: Array.from({ length: 29 }, (_, j) => ({ content: `${i}.${j}` })) })));
  await execute(ctx, alice, importSeed, { treeId: tree._id }, { parentId: null, seed });
  const imported = (await ctx.store.trees.byId(tree._id))!.revision;
  await expect.poll(() => prepared.at(-1)?.revision).toBe(imported);
  // An edit a moment later: the tree is still being written in bulk, so it is prepared again.
  const first = (await ctx.store.cards.liveByTree(tree._id))[0];
  await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: first._id }, { content: "edited after the import" });
  await execute(ctx, alice, updateCard, { treeId: quiet._id, cardId: (await ctx.store.cards.liveByTree(quiet._id))[0]._id }, { content: "a lone edit" });
  const after = (await ctx.store.trees.byId(tree._id))!;
  await expect.poll(() => prepared.at(-1)?.revision).toBe(after.revision);
  // What the next reader gets is the snapshot prepared, its body already made.
  const read = await ctx.readModel.read(after);
  expect(read).toBe(prepared.at(-1));
  expectSame(read, TreeSnapshot.of(after, await ctx.store.cards.liveByTree(tree._id)));
  // The quiet tree's lone edit prepared nothing (twice the delay waited).
  await new Promise((resolve) => setTimeout(resolve, 700));
  expect(prepared.every((snapshot) => snapshot.treeId === tree._id)).toBe(true);

  // Writes seconds apart never add up to a bulk write, however many cards they touch in all.
  const slow = await execute(ctx, alice, createTree, {}, { name: "Slow", seed: SEED });
  await both(slow._id);
  const half = JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ content: `half ${i}`, children: Array.from({ length: 29 }, (_, j) => ({ content: `${i}.${j}` })) })));
  await execute(ctx, alice, importSeed, { treeId: slow._id }, { parentId: null, seed: half });
  await new Promise((resolve) => setTimeout(resolve, 1_300));
  await execute(ctx, alice, importSeed, { treeId: slow._id }, { parentId: null, seed: half });
  await new Promise((resolve) => setTimeout(resolve, 700));
  expect(prepared.some((snapshot) => snapshot.treeId === slow._id)).toBe(false);
});

it("answers a read without waiting only at a revision it holds (issue 27): a later record's read goes to the store", async () => {
  const tree = await execute(ctx, alice, createTree, {}, { name: "Held", seed: SEED });
  const stored = (await ctx.store.trees.byId(tree._id))!;
  expect(ctx.readModel.readHeld(stored)).toBeUndefined();
  const read = await ctx.readModel.read(stored);
  expect(ctx.readModel.readHeld(stored)).toBe(read);
  // A record of a revision the model has not heard (another process's change, a notice without its change).
  expect(ctx.readModel.readHeld({ _id: tree._id, revision: stored.revision! + 1 })).toBeUndefined();
  // A change heard: held at once, at the new revision.
  const [first] = read.places().cards;
  await execute(ctx, alice, updateCard, { treeId: tree._id, cardId: first._id }, { content: "edited" });
  const after = (await ctx.store.trees.byId(tree._id))!;
  expect(ctx.readModel.readHeld(after)?.revision).toBe(after.revision);
});
