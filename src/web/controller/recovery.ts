/**
 * Opening a tree puts back what a previous visit saved or typed but never got to the server:
 * contents queued for saving (kept in localStorage by the save queue) are saved again, and an
 * editor's draft reopens the editor with the draft's text in it.
 */
import { notify, notifyWithText } from "../notify.js";
import { unsavedStore } from "../model/sync.js";
import type { TreeReader } from "../model/tree-state.js";
import type { CardVersions } from "../model/versions.js";
import { readDraft, writeDraft } from "./editing.js";
import type { TreeHost } from "./host.js";

/**
 * Before recoverUnsaved: each recovered text is based on the version it was written from, so
 * if someone changed the card since, its save is refused and merged or asked about (SPEC §10)
 * instead of going over their version.
 */
export function rebaseRecovered(treeId: string, cards: TreeReader, versions: CardVersions): void {
  for (const [cardId, { text, base }] of Object.entries(unsavedStore(treeId).all())) {
    const card = cards.get(cardId);
    if (card && base && card.content !== text) versions.rebase(card, base);
  }
  const draft = readDraft(treeId);
  const card = cards.get(draft?.cardId);
  if (card && draft?.base && card.content !== draft.text) versions.rebase(card, draft.base);
}

export function recoverUnsaved(tree: TreeHost): void {
  const treeId = tree.cards.tree._id;
  const store = unsavedStore(treeId);
  let restored = 0;
  for (const [cardId, { text }] of Object.entries(store.all())) {
    const card = tree.cards.get(cardId);
    if (!card) {
      store.remove(cardId);
      notifyWithText("A card you changed earlier was deleted before your change reached the server.", text);
    } else if (card.content !== text) {
      void tree.applyContent(card, text);
      restored++;
    } else {
      store.remove(cardId);
    }
  }
  if (restored > 0) notify(`Saving ${restored} change${restored === 1 ? "" : "s"} that did not reach the server last time.`);
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
