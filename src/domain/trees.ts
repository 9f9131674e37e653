/**
 * Trees: create, list, rename and publish, delete, clone. Every command loads the tree,
 * asks the policy, then changes it; writes to one tree are serialised by its lock.
 */
import type { DomainContext } from "./context.js";
import { ConflictError, RevisionTakenError, ValidationError } from "../shared/errors.js";
import { newRecordId, now, PUBLIC_URL, RECORD_ID } from "../shared/ids.js";
import { authorizeTree, type Actor, type TreeAction } from "./policy.js";
import type { SeedNode, StoredCard, Tree } from "../shared/records.js";
import { createTreeInput, parseInput, updateTreeInput } from "../shared/schemas.js";
import { assertCardsFit, cardsFromSeed, withinCardAllowance } from "./card-batches.js";
import { commitChange } from "./changes.js";
import { parseSeedOffThread } from "./seed-limits.js";
import { walkTreeOrder } from "../shared/tree-order.js";

const MAX_NAME = 200;

function assertTreeIdSyntax(treeId: string): void {
  if (!RECORD_ID.test(treeId)) {
    throw new ValidationError("The tree id is not valid.", [
      { path: "treeId", message: "must be 24 characters of a-z and 0-9" },
    ]);
  }
}

/**
 * Loads a tree the actor may `action`.
 * @throws ValidationError for a malformed id; UnauthenticatedError, NotFoundError or
 *   ForbiddenError as the policy decides.
 */
export async function loadTree(ctx: DomainContext, actor: Actor | null, treeId: string, action: TreeAction): Promise<Tree> {
  assertTreeIdSyntax(treeId);
  return authorizeTree(actor, action, await ctx.store.trees.byId(treeId));
}

/** Tries of one write that keeps losing its revision to other processes before it answers 409. */
const REVISION_RACE_TRIES = 8;

/**
 * Runs `change` under the tree's write lock with the tree freshly loaded and authorised.
 * Every write to a tree or its cards passes here; it moves the tree's revision through
 * `commitChange` (changes.ts).
 *
 * The lock is this process's. Another process sharing the store (SPEC §11) may commit the
 * revision first; the store then refuses this commit (RevisionTakenError) and nothing was
 * written, so the step runs again, still holding the lock (this process's other writers
 * stay behind it), on the tree as it now is: loaded, authorised and checked afresh (a
 * conditional write whose card really changed now answers 409 from its own version
 * check). Only a write that loses `REVISION_RACE_TRIES` times in a row answers the race's 409.
 */
export function withTree<T>(
  ctx: DomainContext,
  actor: Actor | null,
  treeId: string,
  action: TreeAction,
  change: (tree: Tree) => Promise<T>,
): Promise<T> {
  assertTreeIdSyntax(treeId);
  return ctx.treeLocks.run(treeId, async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await change(await loadTree(ctx, actor, treeId, action));
      } catch (err) {
        if (!(err instanceof RevisionTakenError) || attempt >= REVISION_RACE_TRIES) throw err;
        // After two losses in a row, a short random pause, so two processes stop meeting.
        if (attempt >= 2) await new Promise((resolve) => setTimeout(resolve, Math.random() * 4 * attempt));
      }
    }
  });
}

/** Trees the actor can open, most recently updated first. */
export async function listTrees(ctx: DomainContext, actor: Actor): Promise<Tree[]> {
  const trees = await ctx.store.trees.forUser(actor._id);
  return trees.sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0));
}

async function insertTreeWithCards(ctx: DomainContext, actor: Actor, tree: Tree, cards: StoredCard[]): Promise<Tree> {
  return (await commitChange(ctx, actor, null, { kind: "tree.create", tree, after: cards, at: tree.createdAt })).tree;
}

function newTree(owner: string, name: string, at: string): Tree {
  return { __v: 0, _id: newRecordId(), createdAt: at, updatedAt: at, name, owner, users: [owner] };
}

/**
 * Creates a tree owned by the actor, with the seed's cards or one empty card.
 * @throws ValidationError, PayloadTooLargeError (seed or a card too big), LimitReachedError.
 */
export async function createTree(ctx: DomainContext, actor: Actor, input: unknown): Promise<Tree> {
  const { name, seed } = parseInput(createTreeInput, input);
  const parsed: SeedNode[] = seed === undefined ? [] : await parseSeedOffThread(ctx, seed);
  // A tree always opens on a card: an absent seed, or a JSON seed of `[]`, gives one empty card.
  const nodes = parsed.length > 0 ? parsed : [{ content: "" }];
  const at = now();
  const tree = newTree(actor._id, name, at);
  const cards = cardsFromSeed(nodes, { treeId: tree._id, parentId: null, firstPosition: 0, at, author: actor._id });
  assertCardsFit(ctx, cards);
  return withinCardAllowance(ctx, actor._id, cards.length, () => insertTreeWithCards(ctx, actor, tree, cards));
}

/**
 * Renames, sets latex or publicUrl (null clears it). Setting publicUrl is the owner's alone.
 * @throws ValidationError, ConflictError (publicUrl taken), and the policy's errors.
 */
export async function updateTree(ctx: DomainContext, actor: Actor, treeId: string, input: unknown): Promise<Tree> {
  const body = parseInput(updateTreeInput, input);
  const action: TreeAction = body.publicUrl !== undefined ? "administer" : "write";
  return withTree(ctx, actor, treeId, action, async (tree) => {
    const next: Tree = { ...tree };
    if (body.name !== undefined) next.name = body.name;
    if (body.latex !== undefined) next.latex = body.latex;
    if (body.publicUrl === null) delete next.publicUrl;
    else if (body.publicUrl !== undefined && body.publicUrl !== tree.publicUrl) {
      const holder = await ctx.store.trees.byPublicUrl(body.publicUrl);
      if (holder && holder._id !== tree._id) throw new ConflictError("That public address is taken by another tree.");
      next.publicUrl = body.publicUrl;
    }
    next.__v = tree.__v + 1;
    try {
      return (await commitChange(ctx, actor, tree, { kind: "tree.update", tree: next })).tree;
    } catch (err) {
      if (next.publicUrl && (await ctx.store.trees.byPublicUrl(next.publicUrl))?._id !== tree._id) {
        throw new ConflictError("That public address is taken by another tree.");
      }
      throw err;
    }
  });
}

/** Deletes the tree and all its cards. Owner only. */
export async function deleteTree(ctx: DomainContext, actor: Actor, treeId: string): Promise<void> {
  await withTree(ctx, actor, treeId, "administer", async (tree) => {
    await ctx.store.trees.removeWithCards(tree._id);
    ctx.feed.publishRemoval(tree._id, tree.revision ?? 0);
  });
}

function copyName(name: string): string {
  const suffix = " (copy)";
  return name.slice(0, MAX_NAME - suffix.length) + suffix;
}

async function copyTree(ctx: DomainContext, actor: Actor, source: Tree): Promise<Tree> {
  const sourceCards = await ctx.store.cards.liveByTree(source._id);
  const at = now();
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
export async function cloneTree(ctx: DomainContext, actor: Actor, treeId: string): Promise<Tree> {
  return copyTree(ctx, actor, await loadTree(ctx, actor, treeId, "clone"));
}

/** Copies a public tree, named by its `_id` or its `publicUrl`. */
export async function clonePublicTree(ctx: DomainContext, actor: Actor, idOrUrl: string): Promise<Tree> {
  const tree = RECORD_ID.test(idOrUrl) ? await ctx.store.trees.byId(idOrUrl) : null;
  const found = tree ?? (PUBLIC_URL.test(idOrUrl) ? await ctx.store.trees.byPublicUrl(idOrUrl) : null);
  return copyTree(ctx, actor, authorizeTree(actor, "clonePublic", found));
}

/**
 * The public tree at `publicUrl`, for anyone (signed in or not).
 * @throws NotFoundError unless a tree is public at that address.
 */
export async function findPublicTree(ctx: DomainContext, actor: Actor | null, publicUrl: string): Promise<Tree> {
  const tree = PUBLIC_URL.test(publicUrl) ? await ctx.store.trees.byPublicUrl(publicUrl) : null;
  return authorizeTree(actor, "readPublic", tree);
}
