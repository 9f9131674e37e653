/**
 * The keyboard scope Gingko scripts ask for with `app.get('keyscope')`: `'tree'` while
 * moving between cards, `'editCard'` while a card's editor is open. Keyboard handlers read it
 * to decide what a key means.
 */

export type KeyScope = "tree" | "editCard";

let scope: KeyScope = "tree";

export function keyscope(): KeyScope {
  return scope;
}

export function setKeyscope(next: KeyScope): void {
  scope = next;
  document.body.dataset.keyscope = next;
}

/** A dialog is up: the keys belong to it, not to the tree behind it. */
export function modalOpen(): boolean {
  return document.querySelector("dialog[open]") !== null;
}
