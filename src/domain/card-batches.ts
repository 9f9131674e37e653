/**
 * Turning a nested seed into card records, and the checks every command writing cards
 * passes through: the card limit (SPEC §2 `limit`: the most cards a user may own) and the
 * size of one card (`CARD_CONTENT_LIMIT`).
 */
import type { Ports } from "./context.js";
import { LimitReachedError, NotFoundError, PayloadTooLargeError } from "../shared/errors.js";
import { newRecordId, RECORD_ID } from "../shared/ids.js";
import type { ImportNode, StoredCard, StoredUser } from "../shared/records.js";
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
 * Card records for `nodes` placed under `parentId`, in tree order. A node whose `id` is in
 * `keepIds` (see `withFileIds`) keeps it; every other card gets a new id. Iterative, so a
 * 10,000-level seed does not overflow the stack. Children are positioned 0, 1, 2, ...
 */
export function cardsFromSeed(nodes: readonly ImportNode[], place: Placement, keepIds: ReadonlySet<string> = NONE): StoredCard[] {
  const out: StoredCard[] = [];
  const kept = new Set<string>();
  const stack: { node: ImportNode; parentId: string | null; position: number }[] = [];
  for (let i = nodes.length - 1; i >= 0; i--) {
    stack.push({ node: nodes[i], parentId: place.parentId, position: place.firstPosition + i });
  }
  while (stack.length > 0) {
    const { node, parentId, position } = stack.pop()!;
    // A file may name two cards alike: the first keeps the id.
    const keep = node.id !== undefined && keepIds.has(node.id) && !kept.has(node.id);
    const _id = keep ? node.id! : newRecordId();
    if (keep) kept.add(_id);
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

const NONE: ReadonlySet<string> = new Set();

/** The lock key under which ids from files are checked and written (any tree, any process). */
const FILE_IDS_LOCK = "import:file-card-ids";

/**
 * Runs `write` with the set of ids from `nodes` (a Gingko Writer file names its cards) that
 * the import may keep: of our form (24 characters of a-z and 0-9), the first use of it in the
 * file, and no card's id yet, live or trashed, in any tree. Every other card gets a new id.
 * A store write replaces a card of the same id, so the check and the write run under one
 * lock shared by all processes: two imports of one file cannot both keep an id.
 */
export async function withFileIds<T>(ctx: Ports<"store" | "ownerLocks">, nodes: readonly ImportNode[], write: (keepIds: ReadonlySet<string>) => Promise<T>): Promise<T> {
  const candidates = new Set<string>();
  const seen = new Set<string>();
  const stack: (readonly ImportNode[])[] = [nodes];
  while (stack.length > 0) {
    for (const node of stack.pop()!) {
      if (node.id !== undefined && !seen.has(node.id)) {
        seen.add(node.id);
        if (RECORD_ID.test(node.id)) candidates.add(node.id);
      }
      if (node.children) stack.push(node.children);
    }
  }
  if (candidates.size === 0) return write(NONE);
  return ctx.ownerLocks.run(FILE_IDS_LOCK, async () => {
    const ids = [...candidates];
    const keep = new Set<string>();
    for (let i = 0; i < ids.length; i += ID_CHECKS_AT_ONCE) {
      const batch = ids.slice(i, i + ID_CHECKS_AT_ONCE);
      const found = await Promise.all(batch.map((id) => ctx.store.cards.byId(id)));
      batch.forEach((id, j) => found[j] === null && keep.add(id));
    }
    return write(keep);
  });
}

/** Store reads in flight at once while checking a file's ids. */
const ID_CHECKS_AT_ONCE = 32;

/**
 * One limit for a card's content on every path that writes one (create, edit, import,
 * tree creation, clone; REST and GraphQL alike), chosen in src/config.ts so that any card
 * accepted fits back through `PUT` whatever JSON escaping the client uses.
 * @throws PayloadTooLargeError naming the first card over the limit.
 */
export function assertCardsFit(ctx: Ports<"config">, cards: readonly { content: string }[]): void {
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
 * `read`, when it is the owner's record read from the store under the tree's lock in this
 * attempt (withTree's prefetch), stands for the owner's first read; any other is ignored.
 * @throws LimitReachedError when the cards would take the owner past `limit`.
 */
export async function withinCardAllowance<T>(
  ctx: Ports<"store" | "ownerLocks">,
  ownerId: string,
  adding: number,
  write: () => Promise<T>,
  read?: StoredUser | null,
): Promise<T> {
  const owner = read && read._id === ownerId ? read : await ctx.store.users.byId(ownerId);
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
