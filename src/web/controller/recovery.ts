/**
 * Opening a tree puts back what a previous visit saved or typed but never got to the server:
 * contents queued for saving (kept in localStorage by the save queue) are saved again, and an
 * editor's draft reopens the editor with the draft's text in it.
 */
import { notify, notifyWithText } from "../notify.js";
import { unsavedStore } from "../model/sync.js";
import { readDraft, writeDraft } from "./editing.js";
import type { TreeHost } from "./host.js";

export function recoverUnsaved(tree: TreeHost): void {
  const treeId = tree.cards.tree._id;
  const store = unsavedStore(treeId);
  let restored = 0;
  for (const [cardId, text] of Object.entries(store.all())) {
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
