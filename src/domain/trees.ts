/**
 * Trees: create, list, rename and publish, delete, clone. Every command loads the tree,
 * asks the policy, then changes it; writes to one tree are serialised by its lock.
 */
import type { Ports } from "./context.js";
import { ConflictError } from "../shared/errors.js";
import { newRecordId, PUBLIC_URL, RECORD_ID } from "../shared/ids.js";
import { authorizeTree, type Actor } from "./policy.js";
import type { ImportNode, StoredCard, Tree } from "../shared/records.js";
import { createTreeInput, noInput, updateTreeInput } from "../shared/schemas.js";
import { command, treeCommand } from "./command.js";
import { assertCardsFit, cardsFromSeed, withFileIds, withinCardAllowance } from "./card-batches.js";
import { seedInTreeOrder } from "../shared/seeds.js";
import { commitChange, treeAfter } from "./changes.js";
import { withRecordId } from "./client-ids.js";
import { removalKeyHere } from "./idempotency.js";
import { parseSeedOffThread } from "./seed-limits.js";
import { walkTreeOrder } from "../shared/tree-order.js";

export { loadTree, loadTreeInstantly, withTree } from "./tree-access.js";

const MAX_NAME = 200;

/** Trees the actor can open, most recently updated first. */
export async function listTrees(ctx: Ports<"store">, actor: Actor): Promise<Tree[]> {
  const trees = await ctx.store.trees.forUser(actor._id);
  return trees.sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0));
}

async function insertTreeWithCards(ctx: Ports<"store" | "clock" | "feed">, actor: Actor, tree: Tree, cards: StoredCard[]): Promise<Tree> {
  return (await commitChange(ctx, actor, null, { kind: "tree.create", tree, after: cards, at: tree.createdAt })).tree;
}

function newTree(owner: string, name: string, at: string, _id = newRecordId()): Tree {
  return { __v: 0, _id, createdAt: at, updatedAt: at, name, owner, users: [owner] };
}

/**
 * Creates a tree owned by the actor, with the seed's cards or one empty card; `_id`, when
 * given, is the new tree's id (SPEC §13).
 * @throws ValidationError, PayloadTooLargeError (seed or a card too big), LimitReachedError,
 *   ConflictError (the id is taken).
 */
export const createTree = command({
  name: "createTree",
  needs: ["store", "config", "seeds", "clock", "feed", "ownerLocks"],
  input: createTreeInput,
  action: "signedIn",
  async run(ctx, actor, _target: Record<string, never>, { _id: chosenId, name, seed }): Promise<Tree> {
    const parsed: ImportNode[] = seed === undefined ? [] : await parseSeedOffThread(ctx, seed);
    // A tree always opens on a card: an absent seed, or a JSON seed of `[]`, gives one empty card.
    const nodes = parsed.length > 0 ? parsed : [{ content: "" }];
    const at = ctx.clock.now();
    const tree = newTree(actor._id, name, at, chosenId);
    const place = { treeId: tree._id, parentId: null, firstPosition: 0, at, author: actor._id };
    const inOrder = seedInTreeOrder(nodes);
    assertCardsFit(ctx, inOrder);
    return withinCardAllowance(ctx, actor._id, inOrder.length, () =>
      withRecordId(ctx, "tree", chosenId, () =>
        withFileIds(ctx, nodes, (keepIds) => insertTreeWithCards(ctx, actor, tree, cardsFromSeed(nodes, place, keepIds))),
      ),
    );
  },
  replay: (ctx, change) => treeAfter(ctx, change),
});

/**
 * Renames, sets latex or publicUrl (null clears it). Setting publicUrl is the owner's alone.
 * @throws ValidationError, ConflictError (publicUrl taken), and the policy's errors.
 */
export const updateTree = treeCommand({
  name: "updateTree",
  needs: ["store", "clock", "feed"],
  input: updateTreeInput,
  action: (body) => (body.publicUrl !== undefined ? "administer" : "write"),
  async run(ctx, actor, tree, _target: { treeId: string }, body): Promise<Tree> {
    const next: Tree = { ...tree };
    if (body.name !== undefined) next.name = body.name;
    if (body.latex !== undefined) next.latex = body.latex;
    if (body.publicUrl === null) delete next.publicUrl;
    else if (body.publicUrl !== undefined && body.publicUrl !== tree.publicUrl) {
      const holder = await ctx.store.trees.byPublicUrl(body.publicUrl);
      if (holder && holder._id !== tree._id) throw new ConflictError("That public address is taken by another tree.");
      next.publicUrl = body.publicUrl;
    }
    // Nothing to change (`{}`, or the values it has): no change is recorded, no revision
    // taken, no live event sent, as for cards.
    if (next.name === tree.name && (next.latex ?? false) === (tree.latex ?? false) && next.publicUrl === tree.publicUrl) return tree;
    next.__v = tree.__v + 1;
    try {
      return (await commitChange(ctx, actor, tree, { kind: "tree.update", tree: next })).tree;
    } catch (err) {
      if (next.publicUrl && (await ctx.store.trees.byPublicUrl(next.publicUrl))?._id !== tree._id) {
        throw new ConflictError("That public address is taken by another tree.");
      }
      throw err;
    }
  },
  replay: (ctx, change) => treeAfter(ctx, change),
});

/**
 * Deletes the tree and all its cards. Owner only. A keyed deletion's removal carries its
 * key (SPEC §13): a retry after a crash that lost the answer is answered as the deletion
 * was, not 404 (docs/decisions.md, "A tree's deletion exactly once across a crash").
 */
export const deleteTree = treeCommand({
  name: "deleteTree",
  needs: ["store", "feed", "clock"],
  input: noInput,
  action: "administer",
  async run(ctx, _actor, tree, _target: { treeId: string }): Promise<void> {
    await ctx.store.trees.removeWithCards(tree._id, removalKeyHere(ctx.clock.now()));
    ctx.feed.publishRemoval(tree._id, tree.revision ?? 0);
  },
  replayRemoval: () => undefined,
});

function copyName(name: string): string {
  const suffix = " (copy)";
  return name.slice(0, MAX_NAME - suffix.length) + suffix;
}

async function copyTree(ctx: Ports<"store" | "clock" | "feed" | "config" | "ownerLocks">, actor: Actor, source: Tree): Promise<Tree> {
  const sourceCards = await ctx.store.cards.liveByTree(source._id);
  const at = ctx.clock.now();
  const tree = newTree(actor._id, copyName(source.name), at);
  if (source.latex !== undefined) tree.latex = source.latex;
  const newIds = new Map<string, string>();
  const cards: StoredCard[] = [];
  // Tree order, so every parent has its new id before its children are copied; cards
  // whose parent is gone (not reachable) are not copied.
  for (const { card } of walkTreeOrder(sourceCards)) {
    const _id = newRecordId();
    newIds.set(card._id, _id);
    cards.push({
      _id,
      treeId: tree._id,
      parentId: card.parentId === null ? null : newIds.get(card.parentId)!,
      content: card.content,
      position: card.position,
      createdAt: at,
      updatedAt: at,
      author: actor._id,
    });
  }
  // A card stored before the limit was lowered is not copied into a card PUT cannot save.
  assertCardsFit(ctx, cards);
  return withinCardAllowance(ctx, actor._id, cards.length, () => insertTreeWithCards(ctx, actor, tree, cards));
}

/** A full copy owned by the actor: new ids, no collaborators, no publicUrl. */
export const cloneTree = treeCommand({
  name: "cloneTree",
  needs: ["store", "config", "clock", "feed", "ownerLocks"],
  input: noInput,
  action: "clone",
  reads: true,
  run: (ctx, actor, source, _target: { treeId: string }) => copyTree(ctx, actor, source),
  replay: (ctx, change) => treeAfter(ctx, change),
});

/** Copies a public tree, named by its `_id` or its `publicUrl`. */
export const clonePublicTree = command({
  name: "clonePublicTree",
  needs: ["store", "config", "clock", "feed", "ownerLocks"],
  input: noInput,
  action: "clonePublic",
  async subject(ctx, { idOrUrl }: { idOrUrl: string }): Promise<Tree | null> {
    const tree = RECORD_ID.test(idOrUrl) ? await ctx.store.trees.byId(idOrUrl) : null;
    return tree ?? (PUBLIC_URL.test(idOrUrl) ? await ctx.store.trees.byPublicUrl(idOrUrl) : null);
  },
  run: (ctx, actor, _target, _input, source) => copyTree(ctx, actor, source!),
  replay: (ctx, change) => treeAfter(ctx, change),
});

/**
 * The public tree at `publicUrl`, for anyone (signed in or not).
 * @throws NotFoundError unless a tree is public at that address.
 */
export async function findPublicTree(ctx: Ports<"store">, actor: Actor | null, publicUrl: string): Promise<Tree> {
  const tree = PUBLIC_URL.test(publicUrl) ? await ctx.store.trees.byPublicUrl(publicUrl) : null;
  return authorizeTree(actor, "readPublic", tree);
}
