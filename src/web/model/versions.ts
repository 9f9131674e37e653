/**
 * What the server last confirmed of each card: its version (`__v`) and the fields it had at
 * that version. The card objects of the tree state are the writer's working copy; this is the
 * base a save is made from. A save sends the base's version, so the server refuses it (409)
 * when someone else changed the card since; the base's text is what both edits started from,
 * the common ancestor of a three-way merge (src/web/live/conflicts.ts).
 *
 * The base moves only on the server's word: a save's answer, a create's answer, or a remote
 * change applied to a card with nothing of the writer's pending on it.
 *
 * The base is kept on the card object itself (`BaseSlot`), one per card object: a card object
 * belongs to one open tree, so every CardVersions of that tree reads the same bases.
 */
import type { Card } from "../../shared/records.js";

export type CardBase = Pick<Card, "__v" | "content" | "parentId" | "position">;

/**
 * A class whose constructor returns the object it is given: a subclass's private fields are
 * then added to that object (class fields are defined on whatever `super()` returned).
 */
class Stamp {
  constructor(card: Card) {
    return card as Stamp;
  }
}

/**
 * Each card's base, kept in a private field of the card object itself: like a WeakMap's entry
 * it lives and dies with the card and no script, spread, JSON or structured clone sees it, but
 * it costs what a property costs. A WeakMap of the 100,000 cards of a big tree's open was a
 * quarter of the page's CPU for the cards as they arrived (its entries set one by one, its
 * table grown, and the garbage collector's work for weak entries; issue 27).
 */
class BaseSlot extends Stamp {
  #base: CardBase | undefined;

  static read(card: Card): CardBase | undefined {
    return #base in card ? (card as unknown as BaseSlot).#base : undefined;
  }

  static write(card: Card, base: CardBase): void {
    if (!(#base in card)) new BaseSlot(card);
    (card as unknown as BaseSlot).#base = base;
  }
}

export class CardVersions {
  /**
   * Counts the bases recorded (confirm, rebase): what is derived from the bases (the tree's
   * copy on the device, tree-controller.ts) is keyed by it and made again only when it moved.
   */
  private recorded = 0;

  get generation(): number {
    return this.recorded;
  }

  /** Records the server's copy of `card`; the card object's `__v` follows it, for scripts. */
  confirm(card: Card, server: CardBase): void {
    BaseSlot.write(card, { __v: server.__v, content: server.content, parentId: server.parentId, position: server.position });
    card.__v = server.__v;
    this.recorded++;
  }

  /** The base of `card`: recorded, or (a card never confirmed) the card as it is now. */
  base(card: Card): CardBase {
    let base = BaseSlot.read(card);
    if (!base) {
      base = { __v: card.__v ?? 0, content: card.content, parentId: card.parentId, position: card.position };
      BaseSlot.write(card, base);
    }
    return base;
  }

  /**
   * The writer's text recovered from an earlier visit was written from an older version:
   * its save must be based on that one, so the server refuses it if the card changed since.
   */
  rebase(card: Card, from: { __v: number; content: string }): void {
    if (from.__v >= this.base(card).__v) return;
    BaseSlot.write(card, { __v: from.__v, content: from.content, parentId: card.parentId, position: card.position });
    card.__v = from.__v;
    this.recorded++;
  }

  /** The writer changed something of `card` that the server does not have yet. */
  differs(card: Card): boolean {
    const base = this.base(card);
    return base.content !== card.content || base.parentId !== card.parentId || base.position !== card.position;
  }
}

/**
 * The tree as the server confirmed it, for the device's copy (the page's TreeController.keepCopy
 * and the nothing-lost simulation's SimTab.keepCopy, so that the simulation proves what the page
 * keeps): every card in tree order at its base, but those in `creating` (made here, their create
 * not answered: the server may not have them, and the outbox brings them back at the next open).
 */
export function confirmedCards(order: Iterable<{ card: Card }>, versions: CardVersions, creating: ReadonlySet<Card>): Card[] {
  const cards: Card[] = [];
  for (const { card } of order) {
    if (creating.has(card)) continue;
    const base = versions.base(card);
    cards.push({ ...card, content: base.content, parentId: base.parentId, position: base.position, __v: base.__v });
  }
  return cards;
}
