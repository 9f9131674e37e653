/**
 * Cards: read in tree order, create, modify (content, position, parent only), and delete a
 * card with its subtree to the tree's trash. Parent checks (same tree, live, no cycle) run
 * under the tree's write lock, so concurrent moves cannot build a cycle between them.
 */
import type { Ports } from "./context.js";
import { ConflictError, NotFoundError, ValidationError, MissingParentError, MOVE_CYCLE } from "../shared/errors.js";
import { presentCard } from "./presenters.js";
import { RECORD_ID } from "../shared/ids.js";
import { withRecordId } from "./client-ids.js";
import type { Actor } from "./policy.js";
import type { StoredCard, Tree } from "../shared/records.js";
import { createCardInput, noInput, updateCardInput } from "../shared/schemas.js";
import { assertCardsFit, withinCardAllowance } from "./card-batches.js";
import { commitChange } from "./changes.js";
import { treeCommand } from "./command.js";
import { loadTree } from "./tree-access.js";
import { childrenByParent, walkTreeOrder } from "../shared/tree-order.js";

export function assertCardIdSyntax(cardId: string): void {
  if (!RECORD_ID.test(cardId)) {
    throw new ValidationError("The card id is not valid.", [
      { path: "cardId", message: "must be 24 characters of a-z and 0-9" },
    ]);
  }
}

/**
 * Loads one live card of a tree the actor may read.
 * @throws ValidationError, NotFoundError and the policy's errors.
 */
export async function getCard(ctx: Ports<"store">, actor: Actor | null, cardId: string): Promise<StoredCard> {
  assertCardIdSyntax(cardId);
  const card = await ctx.store.cards.liveById(cardId);
  if (!card) throw new NotFoundError("Card");
  await loadTree(ctx, actor, card.treeId, "read").catch((err) => {
    // A card in a tree the actor cannot open does not exist for them.
    throw err instanceof ValidationError ? err : new NotFoundError("Card");
  });
  return card;
}

/**
 * A parent that is not a live card of the tree is a record not found (404), not a malformed
 * request: the same id was a fine parent until someone deleted it, and the OpenAPI document
 * can only say what an id looks like (issue 28: requests it allows are never a 400).
 */
function assertParent(exists: boolean): void {
  if (!exists) throw new MissingParentError();
}

/**
 * Checks a new card's parent by looking up that one card: loading the whole tree for this
 * made each card creation in a 10,000-card tree cost ~20 ms. Read under the tree's lock
 * (beside the tree: `prefetch` below), so the parent cannot be trashed before the card is written.
 */
function assertParentInTree(tree: Tree, parentId: string | null, parent: StoredCard | null): void {
  if (parentId === null) return;
  assertParent(parent !== null && parent.treeId === tree._id);
}

/**
 * Creates a card. `treeId` in the body must equal the target's (the path's); `_id`, when
 * given, is the new card's id (SPEC §13).
 * @throws ValidationError, PayloadTooLargeError, LimitReachedError, ConflictError (the id
 *   is taken) and the policy's errors.
 */
export const createCard = treeCommand({
  name: "createCard",
  needs: ["store", "config", "clock", "feed", "ownerLocks"],
  input: createCardInput,
  action: "write",
  precheck(ctx, { treeId }: { treeId: string }, body) {
    if (body.treeId !== treeId) {
      throw new ValidationError("treeId in the body must equal the tree in the path.", [
        { path: "treeId", message: "must equal the tree in the path" },
      ]);
    }
    assertCardsFit(ctx, [{ content: body.content ?? "" }]);
  },
  // The parent, and the actor's own record (the owner's, when they write in their own tree,
  // as they mostly do), read beside the tree: on PostgreSQL one round trip under the tree's
  // lock instead of three in a row (issue 27).
  prefetch: async (ctx, actor, _target, body) => {
    const parentId = body.parentId ?? null;
    const [parent, self] = await Promise.all([
      parentId === null ? null : ctx.store.cards.liveById(parentId),
      actor.system ? null : ctx.store.users.byId(actor._id),
    ]);
    return { parent, self };
  },
  async run(ctx, actor, tree, _target, body, { parent, self }): Promise<StoredCard> {
    const parentId = body.parentId ?? null;
    assertParentInTree(tree, parentId, parent);
    return withinCardAllowance(ctx, tree.owner, 1, () => withRecordId(ctx, "card", body._id, async (_id) => {
      const at = ctx.clock.now();
      const card: StoredCard = {
        _id,
        treeId: tree._id,
        parentId,
        content: body.content ?? "",
        position: body.position,
        createdAt: at,
        updatedAt: at,
        author: actor._id,
      };
      const { change } = await commitChange(ctx, actor, tree, { kind: "card.create", after: [card], at });
      return change.after[0];
    }), self);
  },
  replay: (_ctx, change) => change.after[0],
});

/** What a conditional write expects (SPEC §10); absent: the write applies whatever the version. */
export interface WriteCondition {
  version?: number;
}

/**
 * A conditional write of a card that changed since the caller read it changes nothing.
 * @throws ConflictError with the card as it now is in `details.current`.
 */
function assertVersion(card: StoredCard, expected: number | undefined): void {
  if (expected === undefined || (card.__v ?? 0) === expected) return;
  throw new ConflictError(
    `The card changed since you read it (you sent version ${expected}, it is now at ${card.__v ?? 0}); nothing was changed.`,
    { current: presentCard(card) },
  );
}

/** The card a command acts on, and the version a conditional write expects (SPEC §10). */
export interface CardTarget extends WriteCondition {
  treeId: string;
  cardId: string;
}

/**
 * Changes a card's content, position and/or parent; other fields in the body are ignored,
 * except `__v`: the version the write expects (the target's `version`, from If-Match or
 * GraphQL's `version`, comes first).
 * @throws ValidationError (bad field, unknown parent, cycle), PayloadTooLargeError,
 *   NotFoundError, ConflictError (stale version), policy errors.
 */
export const updateCard = treeCommand({
  name: "updateCard",
  needs: ["store", "config", "clock", "feed"],
  input: updateCardInput,
  action: "write",
  precheck: (_ctx, { cardId }: CardTarget) => assertCardIdSyntax(cardId),
  // Read beside the tree under its lock: one round trip there on PostgreSQL, not two (issue 27).
  prefetch: (ctx, _actor, { cardId }) => ctx.store.cards.liveById(cardId),
  async run(ctx, actor, tree, { version }, body, card): Promise<StoredCard> {
    if (!card || card.treeId !== tree._id) throw new NotFoundError("Card");
    assertVersion(card, version ?? body.__v);
    // A card stored before the limit was lowered may still be moved with its content sent back.
    if (body.content !== undefined && body.content !== card.content) assertCardsFit(ctx, [{ content: body.content }]);
    const next: StoredCard = { ...card };
    if (body.content !== undefined) next.content = body.content;
    if (body.position !== undefined) next.position = body.position;
    // Only a move needs the whole tree (to rule out a cycle); an edit, even one whose body
    // repeats the current parentId as Backbone-style clients do, does not load it.
    if (body.parentId !== undefined && body.parentId !== card.parentId) {
      const live = new Map((await ctx.store.cards.liveByTree(tree._id)).map((c) => [c._id, c]));
      assertParent(body.parentId === null || live.has(body.parentId));
      assertNoCycle(live, card._id, body.parentId);
      next.parentId = body.parentId;
    }
    if (next.content === card.content && next.position === card.position && next.parentId === card.parentId) {
      return card;
    }
    next.updatedAt = ctx.clock.now();
    const moved = next.parentId !== card.parentId || next.position !== card.position;
    const kind = moved && next.content === card.content ? "card.move" : "card.update";
    const { change } = await commitChange(ctx, actor, tree, { kind, before: [card], after: [next], at: next.updatedAt });
    return change.after[0];
  },
  replay: (_ctx, change) => change.after[0],
});

/** A card may not become its own parent, nor the child of one of its descendants. */
function assertNoCycle(live: Map<string, StoredCard>, cardId: string, parentId: string | null): void {
  for (let id = parentId; id !== null; id = live.get(id)?.parentId ?? null) {
    if (id === cardId) {
      // The tree as it stands forbids it (a conflict with its state, 409), not the request's form.
      throw new ConflictError(MOVE_CYCLE);
    }
  }
}

/**
 * Moves a card and its whole subtree to the tree's trash; returns the ids, tree order.
 * @throws ValidationError, NotFoundError, ConflictError (stale version) and the policy's errors.
 */
export const deleteCard = treeCommand({
  name: "deleteCard",
  needs: ["store", "clock", "feed"],
  input: noInput,
  action: "write",
  precheck: (_ctx, { cardId }: CardTarget) => assertCardIdSyntax(cardId),
  async run(ctx, actor, tree, { cardId, version }): Promise<string[]> {
    const cards = await ctx.store.cards.liveByTree(tree._id);
    const card = cards.find((c) => c._id === cardId);
    if (!card) throw new NotFoundError("Card");
    assertVersion(card, version);
    const subtree = walkTreeOrder(cards, { rootId: cardId, includeRoot: true, byParent: childrenByParent(cards) }).map(
      (e) => e.card,
    );
    const at = ctx.clock.now();
    const trashed = subtree.map((card) => ({ ...card, trashed: at }));
    await commitChange(ctx, actor, tree, { kind: "card.delete", before: subtree, after: trashed, at });
    return subtree.map((card) => card._id);
  },
  // The change's cards are the subtree in tree order, as `run` returned their ids.
  replay: (_ctx, change) => change.before.map((card) => card._id),
});
