/**
 * The tree as Gingko columns: column N holds the cards at depth N grouped by parent. The
 * active card, its ancestors and its descendants are lit and the rest dimmed; every column
 * scrolls so its lit cards sit in the middle, and the row of columns scrolls sideways to keep
 * the active column in view.
 *
 * Trees run to thousands of cards, so nothing is rebuilt that can be kept: card, group and
 * column elements are reused (keyed by card id, parent id and depth), a redraw only moves the
 * elements whose place changed, and a change of active card only touches the cards whose
 * highlight changed.
 */
import type { Card } from "../../domain/records.js";
import { h } from "../dom.js";
import type { TreeState } from "../model/tree-state.js";
import { createCardElement, renameCardElement, renderCardContent } from "./card.js";
import { DeferredRenderer } from "./deferred-render.js";

type Role = "active" | "ancestor" | "descendant";

const ROOT_GROUP = "";
/** Above this many cards, new cards render their Markdown lazily (views/deferred-render.ts). */
const DEFER_ABOVE = 300;

export class ColumnsView {
  readonly element: HTMLElement;
  private readonly cardElements = new Map<string, HTMLElement>();
  private readonly groupElements = new Map<string, HTMLElement>();
  private readonly columnElements: HTMLElement[] = [];
  private activeId: string | null = null;
  private lit = new Map<string, Role>();
  private readonly deferred = new DeferredRenderer((element) => this.state.get(element.dataset.id));

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

  /** Brings the columns in line with the state; call after cards are added, removed or moved. */
  render(): void {
    const columns = this.state.columns();
    const seenCards = new Set<string>();
    const seenGroups = new Set<string>();
    const columnElements = columns.map((column, index) => {
      const section = this.columnElements[index] ?? this.newColumn(column.depth);
      const groups = column.groups.map((group) => {
        const key = group.parentId ?? ROOT_GROUP;
        seenGroups.add(key);
        const element = this.groupElements.get(key) ?? this.newGroup(key);
        const cards = group.cards.map((card, position) => {
          seenCards.add(card._id);
          return this.cardFor(card, column.depth, position, group.cards.length);
        });
        syncChildren(element, cards);
        return element;
      });
      syncChildren(section.firstElementChild!, groups);
      return section;
    });
    this.columnElements.length = 0;
    this.columnElements.push(...columnElements);
    for (const id of [...this.cardElements.keys()]) if (!seenCards.has(id)) this.forgetCard(id);
    for (const key of [...this.groupElements.keys()]) if (!seenGroups.has(key)) this.groupElements.delete(key);

    if (columnElements.length === 0) {
      this.element.replaceChildren(
        h(
          "div",
          { class: "empty-tree" },
          this.readOnly ? "This tree has no cards." : "This tree is empty. Press Enter or Ctrl+Down to write the first card.",
        ),
      );
    } else {
      syncChildren(this.element, columnElements);
    }
    this.highlight(this.activeId, { scroll: false });
    this.deferred.watch(this.cardElements.values());
  }

  /** Stops background work; the view is going away. */
  stop(): void {
    this.deferred.stop();
  }

  updateCard(card: Card): void {
    const element = this.cardElements.get(card._id);
    if (element) renderCardContent(element, card);
  }

  renameCard(oldId: string, newId: string): void {
    const element = this.cardElements.get(oldId);
    if (element) {
      this.cardElements.delete(oldId);
      this.cardElements.set(newId, element);
      renameCardElement(element, newId);
    }
    const group = this.groupElements.get(oldId);
    if (group) {
      this.groupElements.delete(oldId);
      this.groupElements.set(newId, group);
      group.dataset.parentId = newId;
    }
    const role = this.lit.get(oldId);
    if (role) {
      this.lit.delete(oldId);
      this.lit.set(newId, role);
    }
    if (this.activeId === oldId) this.activeId = newId;
  }

  /** Lights the active card's line and dims the rest; scrolls everything into place. */
  highlight(activeId: string | null, options: { scroll?: boolean; smooth?: boolean } = {}): void {
    this.activeId = activeId;
    const next = new Map<string, Role>();
    if (activeId && this.state.get(activeId)) {
      next.set(activeId, "active");
      for (const card of this.state.ancestors(activeId)) next.set(card._id, "ancestor");
      for (const card of this.state.descendants(activeId)) next.set(card._id, "descendant");
    }
    for (const id of new Set([...this.lit.keys(), ...next.keys()])) {
      const element = this.cardElements.get(id);
      if (!element) continue;
      paintCard(element, next.get(id));
      // What is lit is what the writer looks at: render it before measuring for the scroll.
      if (next.has(id)) this.deferred.render(element);
    }
    this.lit = next;
    this.element.classList.toggle("has-active", next.size > 0);

    const activeParent = activeId ? (this.state.parent(activeId)?._id ?? null) : null;
    for (const [key, group] of this.groupElements) {
      const parentId = key === ROOT_GROUP ? null : key;
      group.classList.toggle("active-group", next.size > 0 && parentId === activeParent);
      group.classList.toggle("lit-group", parentId !== null && next.has(parentId));
    }
    if (options.scroll !== false) this.scrollIntoPlace(options.smooth ?? true);
  }

  /** Centres each column on its lit cards and brings the active column into view. */
  scrollIntoPlace(smooth = true): void {
    const behavior: ScrollBehavior = smooth && !matchMedia("(prefers-reduced-motion: reduce)").matches ? "smooth" : "auto";
    const byColumn = new Map<Element, HTMLElement[]>();
    for (const id of this.lit.keys()) {
      const element = this.cardElements.get(id);
      const column = element?.closest(".column");
      if (!element || !column) continue;
      const list = byColumn.get(column);
      if (list) list.push(element);
      else byColumn.set(column, [element]);
    }
    const active = this.activeId ? this.cardElements.get(this.activeId) : undefined;
    for (const [column, lit] of byColumn) {
      const targets = active && column.contains(active) ? [active] : lit;
      let top = Infinity;
      let bottom = -Infinity;
      for (const target of targets) {
        top = Math.min(top, target.offsetTop);
        bottom = Math.max(bottom, target.offsetTop + target.offsetHeight);
      }
      // A lit block taller than the column shows its start rather than its middle.
      const span = bottom - top;
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

  private newColumn(depth: number): HTMLElement {
    return h("section", { class: "column", "data-depth": depth, "aria-label": `Column ${depth}` }, h("div", { class: "column-inner" }));
  }

  private newGroup(key: string): HTMLElement {
    const group = h("div", { class: "group", "data-parent-id": key });
    this.groupElements.set(key, group);
    return group;
  }

  private forgetCard(id: string): void {
    this.cardElements.delete(id);
    this.lit.delete(id);
  }

  private cardFor(card: Card, depth: number, index: number, count: number): HTMLElement {
    let element = this.cardElements.get(card._id);
    if (!element) {
      element = createCardElement(card, this.readOnly, this.state.size > DEFER_ABOVE);
      this.cardElements.set(card._id, element);
    } else {
      renderCardContent(element, card);
    }
    const hasChildren = this.state.children(card._id).length > 0;
    setAttribute(element, "aria-level", String(depth));
    setAttribute(element, "aria-posinset", String(index + 1));
    setAttribute(element, "aria-setsize", String(count));
    setAttribute(element, "aria-expanded", hasChildren ? "true" : null);
    element.classList.toggle("has-children", hasChildren);
    return element;
  }
}

function paintCard(element: HTMLElement, role: Role | undefined): void {
  element.classList.toggle("active", role === "active");
  element.classList.toggle("ancestor", role === "ancestor");
  element.classList.toggle("descendant", role === "descendant");
  element.classList.toggle("lit", role !== undefined);
  setAttribute(element, "aria-selected", String(role === "active"));
  const tabIndex = role === "active" ? 0 : -1;
  if (element.tabIndex !== tabIndex) element.tabIndex = tabIndex;
}

/** Writes an attribute only when it changes: an unchanged write still costs a style check. */
function setAttribute(element: Element, name: string, value: string | null): void {
  if (element.getAttribute(name) === value) return;
  if (value === null) element.removeAttribute(name);
  else element.setAttribute(name, value);
}

/**
 * Makes `parent`'s children exactly `wanted`, in order, moving only what is out of place:
 * one card moved means one element moved, not a column rebuilt.
 */
function syncChildren(parent: Element, wanted: Element[]): void {
  for (let i = 0; i < wanted.length; i++) {
    const current = parent.children[i];
    if (current !== wanted[i]) parent.insertBefore(wanted[i], current ?? null);
  }
  while (parent.children.length > wanted.length) parent.lastElementChild!.remove();
}
