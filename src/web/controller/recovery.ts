/**
 * Opening a tree puts back what a previous visit (a reloaded or closed tab, a restarted
 * browser, another tab that closed) did but never got to the server:
 * - the changes in the device's outbox that no live tab sends are adopted: applied again to
 *   the cards as loaded (their intent, over whatever is newest: design note rule 2) and sent
 *   in their order with their own idempotency keys, so one that reached the server before
 *   its answer was lost is answered from the server's record, not applied twice;
 * - an editor's draft (text typed but not saved) reopens the editor with it.
 */
import type { Card } from "../../shared/records.js";
import { notify, notifyWithText } from "../notify.js";
import type { TreeReader, TreeState } from "../model/tree-state.js";
import type { CardVersions } from "../model/versions.js";
import { cardBack } from "../offline/replay.js";
import { ChangeBuilder } from "./changes.js";
import { readDraft, writeDraft, type Draft } from "./editing.js";
import type { TreeHost } from "./host.js";

/** Tells the writer their card came back, with its text to copy. */
export function reportBroughtBack(state: TreeState, card: Card): void {
  notifyWithText(`Someone deleted a card you changed (or a card above it) before your change arrived. Your card is back, ${whereIs(state, card)}.`, card.content);
}

/** Where a card brought back stands, for the writer: under which card, or at the top. */
function whereIs(cards: Pick<TreeReader, "get">, card: Card): string {
  const parent = cards.get(card.parentId);
  return parent ? `under “${titleOf(parent.content)}”` : "at the top of the tree";
}

/** A card's first line, short, for a message; "an empty card" when it has none. */
export function titleOf(text: string): string {
  const line = text.split("\n").find((l) => l.trim() !== "") ?? "";
  const title = line.replace(/^#+\s*/, "").trim();
  return title.length > 40 ? `${title.slice(0, 39)}…` : title || "an empty card";
}

export function recoverDraft(tree: TreeHost): void {
  const treeId = tree.cards.tree._id;
  const draft = readDraft(treeId);
  const card = tree.cards.get(draft?.cardId);
  if (draft && card && draft.text !== card.content) {
    tree.activate(card._id, { smooth: false });
    tree.startEdit(card._id, draft.text);
    notify("Recovered the text you were writing. Ctrl+Enter saves it; Escape discards it.", { timeout: 8000 });
  } else if (draft) {
    if (!card && draft.text.trim() !== "") draftBack(tree, draft);
    writeDraft(treeId, null);
  }
}

/**
 * The draft's card is gone: deleted elsewhere while the tab that typed in it was closed. The
 * words come back as a card, as a change's do when its card was deleted before it arrived
 * (the sync queue's 404): where the card stood, or under the nearest card above it still
 * there, or at the top. Offered only in a message, they were gone at the next reload. A card
 * the writer does not want is one delete away, with undo; lost words are not.
 */
function draftBack(tree: TreeHost, draft: Draft): void {
  // A draft kept before drafts knew their place: last at the top.
  const place = draft.place ?? { parentId: null, position: (tree.cards.children(null).at(-1)?.position ?? -1) + 1, path: [] };
  const back = cardBack(tree.cards, tree.cards.tree._id, draft.cardId, draft.text, place, place.path);
  const change = new ChangeBuilder("add");
  change.create(back);
  void tree.commit(change);
  tree.activate(back._id, { smooth: false });
  notifyWithText(`The card you were writing in was deleted by someone else before your text was saved. Your text is back as a card, ${whereIs(tree.cards, back)}.`, draft.text);
}

/** Before recoverDraft: the draft's save is based on the version it was written from. */
export function rebaseDraft(treeId: string, cards: TreeState, versions: CardVersions): void {
  const draft = readDraft(treeId);
  const card = cards.get(draft?.cardId);
  if (card && draft?.base && card.content !== draft.text) versions.rebase(card, draft.base);
}
