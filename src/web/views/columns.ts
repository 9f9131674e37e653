/**
 * The tree as Gingko columns: column N holds the cards at depth N grouped by parent. The
 * active card, its ancestors and its descendants are lit and the rest dimmed; every column
 * scrolls so its lit cards sit in the middle, and the row of columns scrolls sideways to keep
 * the active column in view. Card elements are reused across redraws (keyed by card id), so
 * a redraw after an edit or a move keeps focus and costs little.
 */
import type { Card } from "../../domain/records.js";
import { h } from "../dom.js";
import type { TreeState } from "../model/tree-state.js";
import { createCardElement, renameCardElement, renderCardContent } from "./card.js";

export class ColumnsView {
  readonly element: HTMLElement;
  private readonly cardElements = new Map<string, HTMLElement>();
  private activeId: string | null = null;

  constructor(
    private readonly state: TreeState,
    private readonly readOnly: boolean,
  ) {
    this.element = h("div", {
      class: "columns",
      role: "tree",
      "aria-label": readOnly ? "Cards (read-only)" : "Cards",
      "aria-readonly": readOnly ? "true" : null,
    });
  }

  cardElement(id: string): HTMLElement | undefined {
    return this.cardElements.get(id);
  }

  /** Rebuilds the columns from the state; call after cards are added, removed or moved. */
  render(): void {
    const seen = new Set<string>();
    const columns = this.state.columns().map((column) =>
      h(
        "section",
        { class: "column", "data-depth": column.depth, "aria-label": `Column ${column.depth}` },
        h(
          "div",
          { class: "column-inner" },
          column.groups.map((group) =>
            h(
              "div",
              { class: "group", "data-parent-id": group.parentId ?? "" },
              group.cards.map((card, index) => {
                seen.add(card._id);
                return this.cardFor(card, column.depth, index, group.cards.length);
              }),
            ),
          ),
        ),
      ),
    );
    for (const id of [...this.cardElements.keys()]) if (!seen.has(id)) this.cardElements.delete(id);
    if (columns.length === 0) {
      this.element.replaceChildren(
        h(
          "div",
          { class: "empty-tree" },
          this.readOnly ? "This tree has no cards." : "This tree is empty. Press Enter or Ctrl+Down to write the first card.",
        ),
      );
    } else {
      this.element.replaceChildren(...columns);
    }
    this.highlight(this.activeId, { scroll: false });
  }

  updateCard(card: Card): void {
    const element = this.cardElements.get(card._id);
    if (element) renderCardContent(element, card);
  }

  renameCard(oldId: string, newId: string): void {
    const element = this.cardElements.get(oldId);
    if (!element) return;
    this.cardElements.delete(oldId);
    this.cardElements.set(newId, element);
    renameCardElement(element, newId);
    if (this.activeId === oldId) this.activeId = newId;
  }

  /** Lights the active card's line and dims the rest; scrolls everything into place. */
  highlight(activeId: string | null, options: { scroll?: boolean; smooth?: boolean } = {}): void {
    this.activeId = activeId;
    const lit = new Map<string, string>();
    if (activeId && this.state.get(activeId)) {
      lit.set(activeId, "active");
      for (const card of this.state.ancestors(activeId)) lit.set(card._id, "ancestor");
      for (const card of this.state.descendants(activeId)) lit.set(card._id, "descendant");
    }
    const activeParent = this.state.get(activeId)?.parentId ?? null;
    this.element.classList.toggle("has-active", lit.size > 0);
    for (const [id, element] of this.cardElements) {
      const role = lit.get(id);
      element.classList.toggle("active", role === "active");
      element.classList.toggle("ancestor", role === "ancestor");
      element.classList.toggle("descendant", role === "descendant");
      element.classList.toggle("lit", role !== undefined);
      element.setAttribute("aria-selected", String(role === "active"));
      element.tabIndex = role === "active" ? 0 : -1;
    }
    for (const group of this.element.querySelectorAll<HTMLElement>(".group")) {
      const parentId = group.dataset.parentId || null;
      const isActiveGroup = activeId !== null && parentId === activeParent && group.querySelector(".active") !== null;
      group.classList.toggle("active-group", isActiveGroup);
      group.classList.toggle("lit-group", parentId !== null && lit.has(parentId));
    }
    if (options.scroll !== false) this.scrollIntoPlace(options.smooth ?? true);
  }

  /** Centres each column on its lit cards and brings the active column into view. */
  scrollIntoPlace(smooth = true): void {
    const behavior: ScrollBehavior = smooth && !matchMedia("(prefers-reduced-motion: reduce)").matches ? "smooth" : "auto";
    const active = this.activeId ? this.cardElements.get(this.activeId) : undefined;
    for (const column of this.element.querySelectorAll<HTMLElement>(".column")) {
      const target = column.contains(active ?? null)
        ? [active!]
        : [...column.querySelectorAll<HTMLElement>(".card.lit")];
      if (target.length === 0) continue;
      const top = target[0].offsetTop;
      const last = target[target.length - 1];
      const bottom = last.offsetTop + last.offsetHeight;
      const span = bottom - top;
      // A lit block taller than the column shows its start rather than its middle.
      const wanted = span > column.clientHeight ? top - 24 : top + span / 2 - column.clientHeight / 2;
      column.scrollTo({ top: Math.max(0, wanted), behavior });
    }
    const activeColumn = active?.closest<HTMLElement>(".column");
    if (activeColumn) {
      const left = activeColumn.offsetLeft + activeColumn.offsetWidth / 2 - this.element.clientWidth / 2;
      this.element.scrollTo({ left: Math.max(0, left), behavior });
    }
  }

  focusActive(): void {
    const active = this.activeId ? this.cardElements.get(this.activeId) : undefined;
    active?.focus({ preventScroll: true });
  }

  private cardFor(card: Card, depth: number, index: number, count: number): HTMLElement {
    let element = this.cardElements.get(card._id);
    if (!element) {
      element = createCardElement(card, this.readOnly);
      this.cardElements.set(card._id, element);
    } else {
      renderCardContent(element, card);
    }
    element.setAttribute("aria-level", String(depth));
    element.setAttribute("aria-posinset", String(index + 1));
    element.setAttribute("aria-setsize", String(count));
    const hasChildren = this.state.children(card._id).length > 0;
    if (hasChildren) element.setAttribute("aria-expanded", "true");
    else element.removeAttribute("aria-expanded");
    element.classList.toggle("has-children", hasChildren);
    return element;
  }
}
