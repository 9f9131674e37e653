/**
 * Turning a nested seed into card records, and the card-limit check that every command
 * adding cards passes through (SPEC §2 `limit`: the most cards a user may own).
 */
import type { DomainContext } from "./context.js";
import { LimitReachedError, NotFoundError } from "./errors.js";
import { newRecordId } from "./ids.js";
import type { SeedNode, StoredCard } from "./records.js";
import { ownedCardsCount } from "./users.js";

interface Placement {
  treeId: string;
  parentId: string | null;
  /** Position of the first top-level node; the others follow at +1 each. */
  firstPosition: number;
  at: string;
  author: string;
}

/**
 * Card records for `nodes` placed under `parentId`, in tree order. Iterative, so a
 * 10,000-level seed does not overflow the stack. Children are positioned 0, 1, 2, ...
 */
export function cardsFromSeed(nodes: readonly SeedNode[], place: Placement): StoredCard[] {
  const out: StoredCard[] = [];
  const stack: { node: SeedNode; parentId: string | null; position: number }[] = [];
  for (let i = nodes.length - 1; i >= 0; i--) {
    stack.push({ node: nodes[i], parentId: place.parentId, position: place.firstPosition + i });
  }
  while (stack.length > 0) {
    const { node, parentId, position } = stack.pop()!;
    const _id = newRecordId();
    out.push({
      _id,
      treeId: place.treeId,
      parentId,
      content: node.content,
      position,
      createdAt: place.at,
      updatedAt: place.at,
      author: place.author,
    });
    const children = node.children ?? [];
    for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i], parentId: _id, position: i });
  }
  return out;
}

/**
 * @throws LimitReachedError when adding `adding` cards would take the owner past `limit`.
 */
export async function assertCardAllowance(ctx: DomainContext, ownerId: string, adding: number): Promise<void> {
  const owner = await ctx.store.users.byId(ownerId);
  if (!owner) throw new NotFoundError("User");
  if (owner.limit < 0 || adding === 0) return;
  const owned = await ownedCardsCount(ctx, ownerId);
  if (owned + adding > owner.limit) {
    throw new LimitReachedError(
      `This would make ${owned + adding} cards; the tree's owner may have at most ${owner.limit}.`,
    );
  }
}

/** The next free whole position after `siblings` (0 for none). */
export function positionAfter(siblings: readonly StoredCard[]): number {
  let max = -1;
  for (const card of siblings) if (card.position > max) max = card.position;
  return Math.floor(max) + 1;
}
