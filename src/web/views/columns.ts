/**
 * The tree as Gingko columns: column N holds the cards at depth N grouped by parent. The
 * active card, its ancestors and its descendants are lit and the rest dimmed; every column
 * scrolls so its lit cards sit in the middle, and the row of columns scrolls sideways only as
 * far as needed to show the active column and its neighbours whole.
 *
 * Trees run to tens of thousands of cards, so a column draws only the cards near its view
 * (views/column-window.ts): a 20,000-card tree puts a few dozen card elements in the page,
 * not 20,000. Card elements are made on first need and kept (keyed by id), so a card keeps its
 * element, and its editor's textarea, while it scrolls out and back. A change of active card
 * only repaints the drawn cards whose highlight changed.
 */
import type { Card } from "../../shared/records.js";
import { h, setAttribute, syncChildren } from "../dom.js";
import type { TreeReader } from "../model/tree-state.js";
import { createCardElement, prepareCardContent, renameCardElement, renderCardContent, renderDeferred, type CardRendering } from "./card.js";
import { remoteImagesFor, type RemoteImages } from "../remote-images.js";
import { ColumnWindow, ENTRIES_A_STEP, type ColumnEntry, type Span } from "./column-window.js";
import { DeferredRenderer } from "./deferred-render.js";
import { nextFrame, nextTaskUnclamped } from "./progress.js";

export type Role = "active" | "ancestor" | "descendant";

/**
 * A scroll asked for this soon after the previous one jumps instead of animating: a held or
 * repeated key would otherwise restart the animation on every press and the active card
 * would trail behind the keys.
 */
const REPEAT_MS = 300;

/** Above this many cards, new cards render their Markdown lazily (views/deferred-render.ts). */
const DEFER_ABOVE = 300;
/**
 * How long one slice of drawing the rest of the columns may run (drawRest), in milliseconds
 * of this device's time: a phone four times slower still stays under the 50 ms of a long task.
 */
const SLICE_MS = 5;

export class ColumnsView {
  readonly element: HTMLElement;
  private readonly cardElements = new Map<string, HTMLElement>();
  private columns: ColumnWindow[] = [];
  private activeId: string | null = null;
  private lit = new Map<string, Role>();
  private filter: ReadonlySet<string> | null = null;
  private matches: ReadonlySet<string> | null = null;
  private readonly deferred = new DeferredRenderer((element) => {
    const card = this.state.get(element.dataset.id);
    if (card) renderDeferred(element, card, this.rendering());
  });
  private readonly resize = new ResizeObserver(() => this.scrollIntoPlace(false));
  /** When the columns last scrolled for a key (see REPEAT_MS). */
  private lastScroll = -Infinity;
  /** What cards do with images from other hosts; a read-only tree page is a public page (views/public-page.ts). */
  private readonly remoteImages: RemoteImages;
  /** The tree is opening: columns draw their view first and the rest in slices (drawRest). */
  private growing = true;
  /** The opening's first screen, measured and scrolled into place after the frame that paints it (scrollIntoPlace). */
  private firstScreen: Promise<void> | null = null;
  /** Whether that promise has settled (a focus asked for before it waits for it). */
  private firstScreenPlaced = false;
  /** Whether any column was scrolled into place yet (the first time is the first screen). */
  private placedOnce = false;
  private stopped = false;
  /** Columns scrolled since the last frame, drawn in the next one together (columnScrolled). */
  private readonly scrolledColumns = new Set<ColumnWindow>();
  private scrollFrame = false;

  constructor(
    private readonly state: TreeReader,
    private readonly readOnly: boolean,
  ) {
    this.remoteImages = remoteImagesFor(readOnly);
    this.element = h("div", {
      class: "columns",
      role: "tree",
      "aria-label": readOnly ? "Cards, read-only" : "Cards",
    });
    this.resize.observe(this.element);
  }

  /** The card's element, made now if it was never drawn (scripts and the editor ask). */
  cardElement(id: string): HTMLElement | undefined {
    const existing = this.cardElements.get(id);
    if (existing) return existing;
    const card = this.state.get(id);
    return card ? this.elementFor(card) : undefined;
  }

  /** Shows only these cards (a search: the matches and their ancestors); null shows all. */
  setFilter(ids: ReadonlySet<string> | null, matches: ReadonlySet<string> | null = null): void {
    this.filter = ids;
    this.matches = matches;
    this.render();
  }

  isShown(id: string): boolean {
    return this.filter === null || this.filter.has(id);
  }

  /** Brings the columns in line with the state; call after cards are added, removed or moved. */
  render(): void {
    const steps = this.layOut();
    while (!steps.next().done);
    for (const column of this.columns) column.draw(false);
    this.measureAll(this.columns);
    this.highlight(this.activeId, { scroll: false });
  }

  /**
   * Opening a tree: render()'s columns and every card's place in them, without drawing (the
   * next scrollIntoPlace draws the cards once, where the active card puts them, not first at
   * the top and again), in tasks of about SLICE_MS: at 100,000 cards this was one task of
   * 90-120 ms, the open's longest (issue 27). Call it once, before anything else renders.
   */
  async layOutInSlices(): Promise<void> {
    const steps = this.layOut();
    for (;;) {
      const until = performance.now() + SLICE_MS;
      let step = steps.next();
      while (!step.done && performance.now() < until) step = steps.next();
      if (step.done || this.stopped) return;
      await nextTaskUnclamped();
    }
  }

  /** The columns laid out from the state, yielding every ENTRIES_A_STEP cards or so (layOutInSlices). */
  private *layOut(): Generator<void, void, void> {
    const columns = this.state.columns();
    const next: ColumnWindow[] = [];
    for (const column of columns) {
      const entries: ColumnEntry[] = [];
      let stepEnd = ENTRIES_A_STEP;
      for (const group of column.groups) {
        const cards = this.filter ? group.cards.filter((card) => this.filter!.has(card._id)) : group.cards;
        cards.forEach((card, index) => entries.push({ card, groupKey: group.parentId ?? "", index, count: cards.length }));
        if (entries.length >= stepEnd) {
          stepEnd = entries.length + ENTRIES_A_STEP;
          yield;
        }
      }
      if (entries.length === 0) continue;
      let window = this.columns[next.length];
      if (!window) {
        window = new ColumnWindow(next.length + 1, this.columnHooks());
        if (this.growing) window.startGrowing();
      }
      yield* window.settingEntries(entries);
      next.push(window);
    }
    for (const old of this.columns.slice(next.length)) old.element.remove();
    this.columns = next;
    for (const id of [...this.cardElements.keys()]) if (!this.state.get(id)) this.cardElements.delete(id);

    if (next.length === 0) {
      this.element.replaceChildren(h("div", { class: "empty-tree" }, this.emptyMessage()));
    } else {
      syncChildren(
        this.element,
        next.map((column) => column.element),
      );
    }
  }

  /**
   * The cards the opening's first screen draws when `activeId` is active (scrollIntoPlace:
   * its column's view), once render() laid the columns out; in a tree whose cards render
   * lazily, the active card alone (the others are drawn as plain text first).
   */
  firstScreenCards(activeId: string | null): Card[] {
    const card = this.state.get(activeId);
    if (!card) return [];
    if (this.state.size > DEFER_ABOVE) return [card];
    const column = this.columns.find((c) => c.depth === this.state.depth(card._id));
    const span = column?.span([card._id], this.lit);
    return column && span ? column.cardsAround(span) : [];
  }

  /** Renders a card's Markdown ahead of drawing it (TreeController.prepare). */
  prepareCard(card: Card): void {
    prepareCardContent(card, this.rendering());
  }

  /**
   * Opening a tree: the first drawing (render, then highlight) put in only what each column
   * shows; this draws the rest of every column that is drawn whole (views/column-window.ts), a
   * slice of about SLICE_MS per task, and resolves when every card such a column holds is in
   * the page, or when the view is stopped. Keys and clicks are answered between slices.
   */
  async drawRest(): Promise<void> {
    // Not before the first screen is painted and measured: a slice measures, and would lay the page out first.
    await this.firstScreen;
    while (this.growing && !this.stopped) {
      await new Promise((resolve) => window.setTimeout(resolve, 0));
      if (this.stopped) return;
      const deadline = performance.now() + SLICE_MS;
      // The columns nearest the active card's first: they are the ones in view.
      const depth = this.activeId ? this.state.depth(this.activeId) : 1;
      const order = [...this.columns].sort((a, b) => Math.abs(a.depth - depth) - Math.abs(b.depth - depth));
      const undrawn = order.filter((column) => !column.drawn);
      if (undrawn.length > 0) {
        this.place(undrawn, deadline);
        continue;
      }
      let whole = true;
      for (const column of order) if (!column.grow(deadline)) whole = false;
      if (whole) this.growing = false;
    }
  }

  /**
   * Starts drawing these columns where the active card puts them (ColumnWindow.startAt), as
   * many as `deadline` allows and at least one, then measures them together and scrolls each
   * there: one layout for them all. A large column's view used to be drawn in the frame after
   * its scroll, one column a frame between a 100,000-card tree's first screen and its answering
   * keys (~170 ms); all of them in one frame was a task of 90 ms (every card under the active
   * one is lit, so its Markdown is rendered as it is drawn; issue 27).
   */
  private place(columns: ColumnWindow[], deadline: number): void {
    const ids = this.activeId ? [this.activeId] : [];
    const plans: { column: ColumnWindow; span: Span }[] = [];
    for (const column of columns) {
      const span = column.span(ids, this.lit) ?? { first: 0, last: 0 };
      column.startAt(span);
      plans.push({ column, span });
      if (performance.now() >= deadline) break;
    }
    this.measureAll(plans.map(({ column }) => column));
    for (const { column, span } of plans) column.scrollToSpan(span, "auto");
  }

  /** Stops background work; the view is going away. */
  stop(): void {
    this.stopped = true;
    this.deferred.stop();
    this.resize.disconnect();
  }

  /** Redraws every made card's text (the tree's `latex` setting changed). */
  rerenderAll(): void {
    for (const [id, element] of this.cardElements) {
      const card = this.state.get(id);
      if (!card) continue;
      renderCardContent(element, card, this.rendering());
      this.columnOf(id)?.heightChanged(id);
    }
  }

  updateCard(card: Card): void {
    const element = this.cardElements.get(card._id);
    if (element) renderCardContent(element, card, this.rendering());
    this.columnOf(card._id)?.heightChanged(card._id);
  }

  renameCard(oldId: string, newId: string): void {
    const element = this.cardElements.get(oldId);
    if (element) {
      this.cardElements.delete(oldId);
      this.cardElements.set(newId, element);
      renameCardElement(element, newId);
    }
    for (const column of this.columns) column.renameGroup(oldId, newId);
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
    const previous = this.lit;
    this.lit = next;
    // Only drawn cards carry a highlight; a card drawn later is painted as it is attached.
    for (const column of this.columns) column.repaint(previous, next);
    this.element.classList.toggle("has-active", next.size > 0);
    if (options.scroll !== false) this.scrollIntoPlace(options.smooth ?? true);
  }

  /**
   * Centres each column on its lit cards (the active card in its own column) and scrolls the
   * row sideways just enough to show the active column and its neighbours.
   */
  scrollIntoPlace(smooth = true): void {
    // Keys pressed in a row (a held arrow) skip the animation: each would restart it.
    const now = performance.now();
    const repeated = now - this.lastScroll < REPEAT_MS;
    this.lastScroll = now;
    const animate = smooth && !repeated && !matchMedia("(prefers-reduced-motion: reduce)").matches;
    const behavior: ScrollBehavior = animate ? "smooth" : "auto";
    const activeDepth = this.activeId ? this.state.depth(this.activeId) : 0;
    const ids = this.activeId ? [this.activeId] : [];
    // Writes, then reads, then writes: one layout for all columns.
    // While the tree opens, a column not drawn yet is left to drawRest (one a task), but the
    // active card's: the first screen is that column's view.
    const plans = this.columns
      .filter((column) => !this.growing || column.drawn || column.depth === activeDepth)
      .map((column) => ({ column, span: column.span(ids, this.lit) }));
    // The opening's first screen, when it shows the tree's first card: where it goes needs no
    // measuring (the first column at its top), so it is measured after it is painted (below).
    const atStart = activeDepth === 1 && plans.every(({ span }) => span === null || span.first === 0);
    const firstScreen = this.growing && !this.placedOnce && plans.length > 0 && atStart;
    if (plans.length > 0) this.placedOnce = true;
    for (const { column, span } of plans) {
      if (span) column.drawAround(span);
      else if (!column.drawn) column.draw(false);
    }
    if (firstScreen) {
      // Reading its sizes here made the browser lay out the whole page inside this task (~30-40
      // ms of a phone's time, in a task Lighthouse counts as blocking: issue 27, TBT). After the
      // frame that painted it the layout is there to read. A card further down (the one last
      // visited) is measured at once: drawn unmeasured it would show at the top for a frame.
      this.firstScreen = nextFrame().then(() => {
        this.firstScreenPlaced = true;
        if (!this.stopped) this.placeFirstScreen();
      });
      return;
    }
    this.measureAndScroll(plans, animate, behavior);
  }

  /** The first screen, painted: measured and scrolled into place (nothing more is drawn here: drawRest does). */
  private placeFirstScreen(): void {
    const ids = this.activeId ? [this.activeId] : [];
    const plans = this.columns.filter((column) => column.drawn).map((column) => ({ column, span: column.span(ids, this.lit) }));
    this.measureAndScroll(plans, false, "auto");
  }

  /** Reads the drawn columns' sizes, then scrolls each to its span and the row to the active column. */
  private measureAndScroll(plans: { column: ColumnWindow; span: Span | null }[], animate: boolean, behavior: ScrollBehavior): void {
    const activeDepth = this.activeId ? this.state.depth(this.activeId) : 0;
    this.measureAll(plans.map(({ column }) => column));
    for (const { column, span } of plans) {
      if (!span) continue;
      // The active card is whole on screen in the next frame; the animation only centres it.
      if (animate && column.depth === activeDepth) column.revealSpan(span);
      column.scrollToSpan(span, behavior);
    }
    const index = this.columns.findIndex((column) => column.depth === activeDepth);
    if (index >= 0) this.revealColumns(index, behavior);
  }

  /** A column scrolled: what came into view in every column scrolled is drawn in the next frame, together. */
  private columnScrolled(column: ColumnWindow): void {
    this.scrolledColumns.add(column);
    if (this.scrollFrame) return;
    this.scrollFrame = true;
    requestAnimationFrame(() => {
      this.scrollFrame = false;
      const scrolled = [...this.scrolledColumns].filter((c) => this.columns.includes(c));
      this.scrolledColumns.clear();
      // Reads first (one layout at most), then the drawing, then one measuring for them all:
      // each column's own frame callback read after another's writes, a layout each.
      const due = scrolled.filter((c) => c.needsDrawing());
      for (const c of due) c.draw(false);
      this.measureAll(due);
    });
  }

  /** Every column's sizes read, then every column's spacers written: one layout, not one a column. */
  private measureAll(columns: ColumnWindow[]): void {
    for (const column of columns) column.readSizes();
    for (const column of columns) column.placeSpacers();
  }

  focusActive(): void {
    if (this.firstScreen && !this.firstScreenPlaced) {
      // Focusing makes the browser lay the page out (can the card take focus?): after the
      // first screen is painted and placed, unless something took the focus meanwhile.
      void this.firstScreen.then(() => {
        if (!this.stopped && (document.activeElement === null || document.activeElement === document.body)) this.focusActive();
      });
      return;
    }
    const active = this.activeId ? this.cardElements.get(this.activeId) : undefined;
    if (active?.isConnected) active.focus({ preventScroll: true });
  }

  /**
   * The card about one screen above or below `id` in its column (PageUp / PageDown), or the
   * first or last card of the column at its ends.
   */
  pageFrom(id: string, direction: -1 | 1): string | null {
    return this.columnOf(id)?.pageFrom(id, direction) ?? null;
  }

  /** The cards of `id`'s column as shown (the search filter applies), in order. */
  shownColumn(id: string): Card[] {
    return this.columnOf(id)?.cards() ?? [];
  }

  private columnOf(id: string): ColumnWindow | undefined {
    const depth = this.state.depth(id);
    return this.columns.find((column) => column.depth === depth);
  }

  /**
   * Minimal sideways scroll: the active column and the one on each side whole when they fit
   * (three columns at common widths), else the active column and the next, else the active
   * column alone (a phone). Nothing moves while they are already in view, so the row does not
   * jump on every key.
   */
  private revealColumns(index: number, behavior: ScrollBehavior): void {
    const row = this.element;
    const width = row.clientWidth;
    const box = (i: number) => {
      const element = this.columns[Math.max(0, Math.min(this.columns.length - 1, i))].element;
      return { left: element.offsetLeft, right: element.offsetLeft + element.offsetWidth };
    };
    const spans = [
      [box(index - 1).left, box(index + 1).right],
      [box(index).left, box(index + 1).right],
      [box(index).left, box(index).right],
    ];
    const [left, right] = spans.find(([l, r]) => r - l <= width) ?? spans[2];
    const nearest = (from: number, l: number, r: number) => (l < from ? l : r > from + width ? r - width : from);
    if (behavior === "smooth") {
      // The active column is whole at once; the animation then brings its neighbours in.
      const [activeLeft, activeRight] = spans[2];
      const whole = nearest(row.scrollLeft, activeLeft, Math.min(activeRight, activeLeft + width));
      if (Math.abs(whole - row.scrollLeft) >= 1) row.scrollTo({ left: whole, behavior: "auto" });
    }
    const target = nearest(row.scrollLeft, left, right);
    if (Math.abs(target - row.scrollLeft) >= 1) row.scrollTo({ left: target, behavior });
  }

  private rendering(): CardRendering {
    return { readOnly: this.readOnly, latex: this.state.tree.latex === true, remoteImages: this.remoteImages };
  }

  private emptyMessage(): string {
    if (this.filter) return "No card matches the search.";
    return this.readOnly ? "This tree has no cards." : "This tree is empty. Press Enter or Ctrl+Down to write the first card.";
  }

  private columnHooks() {
    return {
      element: (card: Card) => this.elementFor(card),
      attached: (element: HTMLElement, entry: ColumnEntry, depth: number) => this.attached(element, entry, depth),
      role: (id: string) => this.lit.get(id),
      activeParent: () => (this.activeId ? (this.state.parent(this.activeId)?._id ?? "") : null),
      scrolled: (column: ColumnWindow) => this.columnScrolled(column),
    };
  }

  private elementFor(card: Card): HTMLElement {
    let element = this.cardElements.get(card._id);
    if (!element) {
      element = createCardElement(card, this.rendering(), this.state.size > DEFER_ABOVE);
      this.cardElements.set(card._id, element);
      this.deferred.watch([element]);
    }
    return element;
  }

  /** A card was put in the page: bring its text, its tree attributes and its highlight up to date. */
  private attached(element: HTMLElement, entry: ColumnEntry, depth: number): void {
    const { card } = entry;
    renderCardContent(element, card, this.rendering());
    const hasChildren = this.state.children(card._id).length > 0;
    setAttribute(element, "aria-level", String(depth));
    setAttribute(element, "aria-posinset", String(entry.index + 1));
    setAttribute(element, "aria-setsize", String(entry.count));
    setAttribute(element, "aria-expanded", hasChildren ? "true" : null);
    element.classList.toggle("has-children", hasChildren);
    element.classList.toggle("match", this.matches?.has(card._id) ?? false);
    paintCard(element, this.lit.get(card._id));
    if (this.lit.has(card._id)) this.deferred.render(element);
  }
}

export function paintCard(element: HTMLElement, role: Role | undefined): void {
  element.classList.toggle("active", role === "active");
  element.classList.toggle("ancestor", role === "ancestor");
  element.classList.toggle("descendant", role === "descendant");
  element.classList.toggle("lit", role !== undefined);
  setAttribute(element, "aria-selected", String(role === "active"));
  const tabIndex = role === "active" ? 0 : -1;
  if (element.tabIndex !== tabIndex) element.tabIndex = tabIndex;
}
