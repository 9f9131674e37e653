/**
 * The keyboard scope Gingko scripts ask for with `app.get('keyscope')`: `'tree'` while
 * moving between cards, `'editCard'` while a card's editor is open. Keyboard handlers read it
 * to decide what a key means.
 */

export type KeyScopeName = "tree" | "editCard";

export class KeyScope {
  private scope: KeyScopeName = "tree";

  get current(): KeyScopeName {
    return this.scope;
  }

  set(next: KeyScopeName): void {
    this.scope = next;
    document.body.dataset.keyscope = next;
  }
}

/** A dialog is up: the keys belong to it, not to the tree behind it. */
export function modalOpen(): boolean {
  return document.querySelector("dialog[open]") !== null;
}
