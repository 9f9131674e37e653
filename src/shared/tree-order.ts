/**
 * Sibling order and tree order (SPEC §2): siblings by position, then createdAt, then _id;
 * tree order is depth-first pre-order. Iterative throughout, so a 10,000-level chain of
 * cards cannot overflow the stack.
 */
import type { CardFields } from "./records.js";

/** What tree order reads of a card. */
type Orderable = Pick<CardFields, "_id" | "parentId" | "position" | "createdAt">;

export function compareSiblings(a: Orderable, b: Orderable): number {
  if (a.position !== b.position) return a.position - b.position;
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a._id < b._id ? -1 : a._id > b._id ? 1 : 0;
}

/** Children of each parent id (null key: the first column), each list in sibling order. */
export function childrenByParent<C extends Orderable>(cards: readonly C[]): Map<string | null, C[]> {
  const byParent = new Map<string | null, C[]>();
  for (const card of cards) {
    const list = byParent.get(card.parentId);
    if (list) list.push(card);
    else byParent.set(card.parentId, [card]);
  }
  for (const list of byParent.values()) list.sort(compareSiblings);
  return byParent;
}

export interface OrderedCard<C extends Orderable = CardFields> {
  card: C;
  /** 1 for a first-column card. */
  depth: number;
}

/**
 * Walks the tree in pre-order from `rootId`'s children (null: the whole tree), or from the
 * card `rootId` itself when `includeRoot` is set. Cards whose parent is missing from the
 * list are not reached.
 */
export function walkTreeOrder<C extends Orderable>(
  cards: readonly C[],
  options: { rootId?: string | null; includeRoot?: boolean; byParent?: Map<string | null, C[]> } = {},
): OrderedCard<C>[] {
  const byParent = options.byParent ?? childrenByParent(cards);
  const rootId = options.rootId ?? null;
  const out: OrderedCard<C>[] = [];
  const stack: OrderedCard<C>[] = [];
  if (options.includeRoot && rootId !== null) {
    const root = cards.find((c) => c._id === rootId);
    if (!root) return out;
    stack.push({ card: root, depth: depthOf(cards, root) });
  } else {
    const baseDepth = rootId === null ? 0 : depthOf(cards, cards.find((c) => c._id === rootId));
    pushChildren(stack, byParent.get(rootId), baseDepth + 1);
  }
  while (stack.length > 0) {
    const entry = stack.pop()!;
    out.push(entry);
    pushChildren(stack, byParent.get(entry.card._id), entry.depth + 1);
  }
  return out;
}

function pushChildren<C extends Orderable>(stack: OrderedCard<C>[], children: C[] | undefined, depth: number) {
  if (!children) return;
  for (let i = children.length - 1; i >= 0; i--) stack.push({ card: children[i], depth });
}

function depthOf(cards: readonly Orderable[], card: Orderable | undefined): number {
  if (!card) return 0;
  const byId = new Map(cards.map((c) => [c._id, c]));
  let depth = 1;
  let parentId = card.parentId;
  while (parentId !== null) {
    const parent = byId.get(parentId);
    if (!parent) break;
    depth++;
    parentId = parent.parentId;
  }
  return depth;
}
