/**
 * What the server last confirmed of each card: its version (`__v`) and the fields it had at
 * that version. The card objects of the tree state are the writer's working copy; this is the
 * base a save is made from. A save sends the base's version, so the server refuses it (409)
 * when someone else changed the card since; the base's text is what both edits started from,
 * the common ancestor of a three-way merge (src/web/live/conflicts.ts).
 *
 * The base moves only on the server's word: a save's answer, a create's answer, or a remote
 * change applied to a card with nothing of the writer's pending on it.
 */
import type { Card } from "../../shared/records.js";

export type CardBase = Pick<Card, "__v" | "content" | "parentId" | "position">;

export class CardVersions {
  private readonly bases = new WeakMap<Card, CardBase>();

  /** Records the server's copy of `card`; the card object's `__v` follows it, for scripts. */
  confirm(card: Card, server: CardBase): void {
    this.bases.set(card, { __v: server.__v, content: server.content, parentId: server.parentId, position: server.position });
    card.__v = server.__v;
  }

  /** The base of `card`: recorded, or (a card never confirmed) the card as it is now. */
  base(card: Card): CardBase {
    let base = this.bases.get(card);
    if (!base) {
      base = { __v: card.__v ?? 0, content: card.content, parentId: card.parentId, position: card.position };
      this.bases.set(card, base);
    }
    return base;
  }

  /**
   * The writer's text recovered from an earlier visit was written from an older version:
   * its save must be based on that one, so the server refuses it if the card changed since.
   */
  rebase(card: Card, from: { __v: number; content: string }): void {
    if (from.__v >= this.base(card).__v) return;
    this.bases.set(card, { __v: from.__v, content: from.content, parentId: card.parentId, position: card.position });
    card.__v = from.__v;
  }

  /** The writer changed something of `card` that the server does not have yet. */
  differs(card: Card): boolean {
    const base = this.base(card);
    return base.content !== card.content || base.parentId !== card.parentId || base.position !== card.position;
  }
}
