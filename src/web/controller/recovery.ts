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
import type { TreeState } from "../model/tree-state.js";
import type { CardVersions } from "../model/versions.js";
import { readDraft, writeDraft } from "./editing.js";
import type { TreeHost } from "./host.js";

/** Tells the writer their card came back, with its text to copy. */
export function reportBroughtBack(state: TreeState, card: Card): void {
  const parent = state.get(card.parentId);
  const where = parent ? `under “${titleOf(parent.content)}”` : "at the top of the tree";
  notifyWithText(`Someone deleted a card you changed (or a card above it) before your change arrived. Your card is back, ${where}.`, card.content);
}

function titleOf(text: string): string {
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
    if (!card && draft.text.trim() !== "") notifyWithText("Text you were writing belonged to a card that no longer exists.", draft.text);
    writeDraft(treeId, null);
  }
}

/** Before recoverDraft: the draft's save is based on the version it was written from. */
export function rebaseDraft(treeId: string, cards: TreeState, versions: CardVersions): void {
  const draft = readDraft(treeId);
  const card = cards.get(draft?.cardId);
  if (card && draft?.base && card.content !== draft.text) versions.rebase(card, draft.base);
}
