/**
 * Turning a nested seed into card records, and the checks every command writing cards
 * passes through: the card limit (SPEC §2 `limit`: the most cards a user may own) and the
 * size of one card (`CARD_CONTENT_LIMIT`).
 */
import type { DomainContext } from "./context.js";
import { LimitReachedError, NotFoundError, PayloadTooLargeError } from "../shared/errors.js";
import { newRecordId } from "../shared/ids.js";
import type { SeedNode, StoredCard } from "../shared/records.js";
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
 * One limit for a card's content on every path that writes one (create, edit, import,
 * tree creation, clone; REST and GraphQL alike), chosen in src/config.ts so that any card
 * accepted fits back through `PUT` whatever JSON escaping the client uses.
 * @throws PayloadTooLargeError naming the first card over the limit.
 */
export function assertCardsFit(ctx: DomainContext, cards: readonly { content: string }[]): void {
  const most = ctx.config.limits.cardContentChars;
  const index = cards.findIndex((card) => card.content.length > most);
  if (index < 0) return;
  const which = cards.length > 1 ? `Card ${index + 1} of ${cards.length} (in tree order)` : "The card";
  throw new PayloadTooLargeError(
    `${which} has ${cards[index].content.length} characters; a card may hold at most ${most}.`,
  );
}

/**
 * Runs `write`, which adds `adding` cards to trees `ownerId` owns, if the owner's limit
 * allows them. For an owner with a limit, the count and the write run under the owner's
 * lock: counted per tree, two writes into different trees could each see room for their
 * cards and together go past the limit. Lock order is always tree, then owner.
 * @throws LimitReachedError when the cards would take the owner past `limit`.
 */
export async function withinCardAllowance<T>(
  ctx: DomainContext,
  ownerId: string,
  adding: number,
  write: () => Promise<T>,
): Promise<T> {
  const owner = await ctx.store.users.byId(ownerId);
  if (!owner) throw new NotFoundError("User");
  if (owner.limit < 0 || adding === 0) return write();
  return ctx.ownerLocks.run(ownerId, async () => {
    const limit = (await ctx.store.users.byId(ownerId))?.limit ?? owner.limit;
    if (limit >= 0) {
      const owned = await ownedCardsCount(ctx, ownerId);
      if (owned + adding > limit) {
        throw new LimitReachedError(`This would make ${owned + adding} cards; the tree's owner may have at most ${limit}.`);
      }
    }
    return write();
  });
}

/** The next free whole position after `siblings` (0 for none). */
export function positionAfter(siblings: readonly StoredCard[]): number {
  let max = -1;
  for (const card of siblings) if (card.position > max) max = card.position;
  return Math.floor(max) + 1;
}
