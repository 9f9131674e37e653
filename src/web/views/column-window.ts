/**
 * One column of cards that draws only what is near its view. The column keeps every card's
 * height (measured once drawn, estimated from its text before) and their running sums, so it
 * knows where each card sits without drawing it: a spacer above and one below the drawn cards
 * stand in for the rest, and scrolling draws the cards coming into view.
 *
 * A column of a few hundred cards or fewer is drawn whole (the spacers are then empty): small
 * trees keep every `#card<id>` in the page, as scripts written for Gingko expect. While a tree
 * opens, such a column "grows": it first draws only the cards near its view, like a large one,
 * and `grow()` then draws the rest a slice at a time (views/columns.ts, `drawRest`), so the
 * first screen is not held up by drawing a few hundred cards nobody sees yet.
 */
import type { Card } from "../../shared/records.js";
import { h, syncChildren } from "../dom.js";
import type { Role } from "./columns.js";

export interface ColumnEntry {
  card: Card;
  /** The parent's id, "" for the first column. */
  groupKey: string;
  /** Place among the shown siblings, and how many there are. */
  index: number;
  count: number;
}

export interface ColumnHooks {
  element(card: Card): HTMLElement;
  attached(element: HTMLElement, entry: ColumnEntry, depth: number): void;
  role(id: string): Role | undefined;
  /** The group key of the active card's parent, or null when no card is active. */
  activeParent(): string | null;
  /**
   * The column scrolled (a drawn-in-part column only): the view draws what came into view,
   * every column scrolled in a frame at once (`needsDrawing`, `draw(false)`, then measuring).
   */
  scrolled(column: ColumnWindow): void;
}

export interface Span {
  first: number;
  last: number;
}

/** Entries laid out between two yields of settingEntries (about a millisecond of this machine's time). */
export const ENTRIES_A_STEP = 2_000;
/** Columns with more cards than this draw only the part near their view. */
const DRAW_ALL_UP_TO = 250;
/** Space between two groups (CSS: .group margin-bottom). */
const GROUP_GAP = 18;

export class ColumnWindow {
  readonly element: HTMLElement;
  private readonly inner: HTMLElement;
  private readonly before = h("div", { class: "column-spacer", "aria-hidden": "true" });
  private readonly after = h("div", { class: "column-spacer", "aria-hidden": "true" });
  private entries: ColumnEntry[] = [];
  private readonly indexOf = new Map<string, number>();
  private heights: number[] = [];
  /** offsets[i] is the top of entry i within the column's content; offsets[n] is the total. */
  private offsets = new Float64Array(1);
  private readonly measured = new Map<string, { content: string; height: number }>();
  private readonly groups = new Map<string, HTMLElement>();
  private from = 0;
  private to = 0;
  /** Drawing near the view only until grow() has drawn the column whole (see the file's comment). */
  private growing = false;
  /** The column's height and top padding as last measured (reading them forces a layout). */
  private view = 800;
  private padTop = 0;

  constructor(
    readonly depth: number,
    private readonly hooks: ColumnHooks,
  ) {
    this.inner = h("div", { class: "column-inner" });
    this.element = h("div", { class: "column", role: "group", "data-depth": depth, "aria-label": `Column ${depth}` }, this.inner);
    this.element.addEventListener("scroll", () => this.scrolled(), { passive: true });
  }

  /** Whether any card of it is in the page (a column is first drawn where it will be seen). */
  get drawn(): boolean {
    return this.to > 0;
  }

  get windowed(): boolean {
    return this.growing || this.entries.length > DRAW_ALL_UP_TO;
  }

  /** Draws only near the view from now on, until grow() has drawn the column whole. */
  startGrowing(): void {
    this.growing = true;
  }

  /**
   * Draws more of a growing column, below its view first (nothing on screen moves), then above
   * it (scroll anchoring keeps the view still), until `deadline` (a `performance.now()` time).
   * True once the column is whole, or too large to be drawn whole.
   */
  grow(deadline: number): boolean {
    if (!this.growing) return true;
    const n = this.entries.length;
    if (n > DRAW_ALL_UP_TO) {
      this.growing = false;
      return true;
    }
    if (performance.now() >= deadline) return false;
    let from = this.from;
    let to = this.to;
    while ((from > 0 || to < n) && performance.now() < deadline) {
      // One card at a time between looks at the clock: one card's Markdown can take milliseconds.
      const [first, last] = to < n ? [to, to + 1] : [from - 1, from];
      // Made (and their Markdown rendered) here, where the clock is watched; attached below.
      for (let i = first; i < last; i++) this.hooks.element(this.entries[i].card);
      if (to < n) to = last;
      else from = first;
    }
    this.drawRange(from, to, true, [this.from, this.to]);
    if (from > 0 || to < n) return false;
    this.growing = false;
    return true;
  }

  setEntries(entries: ColumnEntry[]): void {
    const steps = this.settingEntries(entries);
    while (!steps.next().done);
  }

  /**
   * setEntries in steps of ENTRIES_A_STEP entries (yields between them), for a column not in
   * use until the last step is done: a tree's opening lays a column of 60,000 cards out in
   * short tasks (views/columns.ts, `layOutInSlices`), where one task of it all was the longest
   * of the open (issue 27).
   */
  *settingEntries(entries: ColumnEntry[]): Generator<void, void, void> {
    this.entries = entries;
    this.from = 0;
    this.to = 0;
    this.indexOf.clear();
    const width = this.element.isConnected ? this.element.clientWidth : 360;
    const fontSize = parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--card-font-size")) || 16;
    const heights: number[] = [];
    for (let i = 0; i < entries.length; i++) {
      const { card } = entries[i];
      this.indexOf.set(card._id, i);
      const known = this.measured.get(card._id);
      heights.push(known && known.content === card.content ? known.height : estimateHeight(card.content, width, fontSize));
      if (i % ENTRIES_A_STEP === ENTRIES_A_STEP - 1) yield;
    }
    this.heights = heights;
    this.sum();
  }

  cards(): Card[] {
    return this.entries.map((entry) => entry.card);
  }

  /** Draws the cards near the current view (all of them in a small column); measure() after. */
  draw(measure = true): void {
    const [from, to] = this.rangeAt(this.element.scrollTop);
    this.drawRange(from, to, measure);
  }

  /** A card's text changed: its height is measured again. */
  heightChanged(id: string): void {
    this.measured.delete(id);
    const index = this.indexOf.get(id);
    if (index !== undefined && index >= this.from && index < this.to) this.measure();
  }

  renameGroup(oldId: string, newId: string): void {
    const group = this.groups.get(oldId);
    if (group) {
      this.groups.delete(oldId);
      this.groups.set(newId, group);
      group.dataset.parentId = newId;
    }
    const measured = this.measured.get(oldId);
    if (measured) this.measured.set(newId, measured);
    this.reindex();
  }

  /** Repaints the drawn cards and groups whose highlight changed. */
  repaint(previous: Map<string, Role>, next: Map<string, Role>): void {
    for (let i = this.from; i < this.to; i++) {
      const id = this.entries[i].card._id;
      if (previous.get(id) !== next.get(id)) this.hooks.attached(this.hooks.element(this.entries[i].card), this.entries[i], this.depth);
    }
    this.paintGroups();
  }

  /**
   * The span of entries to centre: the given cards when this column holds any, else its lit
   * cards. Scrolling is planned for every column first, then drawn, measured and scrolled in
   * that order across all columns, so a key costs one layout, not one per column.
   */
  span(ids: string[], lit: Map<string, Role>): Span | null {
    let first = -1;
    let last = -1;
    for (const id of ids) {
      const index = this.indexOf.get(id);
      if (index === undefined) continue;
      if (first < 0 || index < first) first = index;
      last = Math.max(last, index);
    }
    if (first >= 0) return { first, last };
    // Whichever is shorter is read: the lit cards (a small subtree in a column of thousands,
    // issue 27: a key costs what is lit, not the column's length) or the column's entries.
    if (lit.size < this.entries.length) {
      for (const id of lit.keys()) {
        const index = this.indexOf.get(id);
        if (index === undefined) continue;
        if (first < 0 || index < first) first = index;
        last = Math.max(last, index);
      }
    } else {
      for (let i = 0; i < this.entries.length; i++) {
        if (!lit.has(this.entries[i].card._id)) continue;
        if (first < 0) first = i;
        last = i;
      }
    }
    return first >= 0 ? { first, last } : null;
  }

  /**
   * A column's first drawing as a tree opens, not measured yet (the caller measures the columns
   * it started together, then scrolls each to its span): a column drawn whole in the end, the
   * first card of `span` (grow() draws the rest a card at a time, so a phone's task stays short);
   * a larger one, its view around where `span` will be centred.
   */
  startAt(span: Span): void {
    if (this.entries.length <= DRAW_ALL_UP_TO) this.drawRange(span.first, span.first + 1, false);
    else this.drawAround(span);
  }

  /** Draws the cards around where `span` will be centred (without measuring them yet). */
  drawAround(span: Span): void {
    this.drawRange(...this.rangeAt(this.scrollTopFor(span)), false);
  }

  /** The cards drawAround(span) would draw now. */
  cardsAround(span: Span): Card[] {
    const [from, to] = this.rangeAt(this.scrollTopFor(span));
    return this.entries.slice(from, to).map((entry) => entry.card);
  }

  /** Scrolls to centre `span`; call after measure(). */
  scrollToSpan(span: Span, behavior: ScrollBehavior): void {
    const target = this.scrollTopFor(span);
    const distance = Math.abs(target - this.element.scrollTop);
    if (distance < 1) return;
    // A long smooth scroll through cards drawn on the way would land on estimates.
    this.element.scrollTo({ top: target, behavior: distance > 2 * this.view ? "auto" : behavior });
  }

  /**
   * Scrolls at once, by as little as needed, so that `span` is whole in view (its top when it
   * is taller than the view); call after measure(). A smooth scrollToSpan afterwards keeps it
   * in view all the way, since it starts and ends with the span in view.
   */
  revealSpan({ first, last }: Span): void {
    const top = this.padTop + this.offsets[first];
    const bottom = Math.min(this.padTop + this.offsets[last] + this.heights[last], top + this.view);
    const now = this.element.scrollTop;
    const target = top < now ? top : bottom > now + this.view ? bottom - this.view : now;
    if (Math.abs(target - now) >= 1) this.element.scrollTo({ top: Math.max(0, Math.round(target)), behavior: "auto" });
  }

  /** The card about a screen above or below `id`; the column's end when nearer than that. */
  pageFrom(id: string, direction: -1 | 1): string | null {
    const index = this.indexOf.get(id);
    if (index === undefined) return null;
    const y = this.offsets[index] + direction * Math.max(100, this.view * 0.8);
    let target = Math.min(this.entries.length - 1, Math.max(0, this.indexAt(y)));
    if (target === index) target = Math.min(this.entries.length - 1, Math.max(0, index + direction));
    return this.entries[target].card._id;
  }

  private scrollTopFor({ first, last }: Span): number {
    const top = this.offsets[first];
    const span = this.offsets[last] + this.heights[last] - top;
    // A lit block taller than the column shows its start rather than its middle.
    const content = span > this.view ? top - 24 : top + span / 2 - this.view / 2;
    return Math.max(0, Math.round(this.padTop + content));
  }

  private scrolled(): void {
    if (this.windowed) this.hooks.scrolled(this);
  }

  /** Whether cards scrolled into view that are not drawn (reads the scroll position: call before any drawing in a frame). */
  needsDrawing(): boolean {
    if (!this.windowed) return false;
    const [from, to] = this.rangeAt(this.element.scrollTop, 0.1);
    return from < this.from || to > this.to;
  }

  /** The entries to draw for a scroll position: the view and `overscan` views each side. */
  private rangeAt(scrollTop: number, overscan = 0.5): [number, number] {
    if (!this.windowed) return [0, this.entries.length];
    // A growing column's first drawing is the view alone: the rest follows in slices.
    if (this.growing && this.to === 0) overscan = 0;
    const view = this.view;
    const top = scrollTop - this.padTop;
    const from = Math.max(0, this.indexAt(top - overscan * view));
    const to = Math.max(Math.min(this.entries.length, this.indexAt(top + view + overscan * view) + 1), from + 1);
    // A growing column keeps what it drew: it is on its way to whole.
    if (this.growing && this.to > 0) return [Math.min(from, this.from), Math.max(to, this.to)];
    return [from, to];
  }

  /** The entry at content height `y` (binary search over the running sums). */
  private indexAt(y: number): number {
    let low = 0;
    let high = this.entries.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (this.offsets[middle] <= y) low = middle;
      else high = middle - 1;
    }
    return low;
  }

  /** `attachedAlready`: a range of entries drawn and up to date, not attached again. */
  private drawRange(from: number, to: number, measure = true, attachedAlready: [number, number] = [0, 0]): void {
    const [keptFrom, keptTo] = attachedAlready;
    this.from = from;
    this.to = to;
    const groups: HTMLElement[] = [];
    let i = from;
    while (i < to) {
      const key = this.entries[i].groupKey;
      const cards: HTMLElement[] = [];
      for (; i < to && this.entries[i].groupKey === key; i++) {
        const element = this.hooks.element(this.entries[i].card);
        if (i < keptFrom || i >= keptTo) this.hooks.attached(element, this.entries[i], this.depth);
        cards.push(element);
      }
      const group = this.groupElement(key);
      syncChildren(group, cards);
      groups.push(group);
    }
    syncChildren(this.inner, [this.before, ...groups, this.after]);
    for (const key of [...this.groups.keys()]) if (!this.groups.get(key)!.isConnected) this.groups.delete(key);
    this.paintGroups();
    if (measure) this.measure();
  }

  /** Reads the drawn cards' heights (and the column's box); the spacers follow. */
  measure(): void {
    this.readSizes();
    this.placeSpacers();
  }

  /**
   * measure()'s reading half. Several columns read first and write their spacers after
   * (`placeSpacers`): a column's spacers written before the next column reads made the browser
   * lay the page out again for each column, up to eight layouts a key (issue 27).
   */
  readSizes(): void {
    this.view = this.element.clientHeight || this.view;
    this.padTop = this.inner.offsetTop;
    let changed = -1;
    for (let i = this.from; i < this.to; i++) {
      const { card } = this.entries[i];
      const element = this.hooks.element(card);
      if (!element.isConnected) continue;
      // Fractional: offsetHeight rounds, and the running sums drifted a pixel every few cards
      // (a card revealed by PageUp stood 2.5 px above the column's top).
      const height = element.getBoundingClientRect().height;
      this.measured.set(card._id, { content: card.content, height });
      if (height !== this.heights[i]) {
        this.heights[i] = height;
        if (changed < 0) changed = i;
      }
    }
    if (changed >= 0) this.sum(changed);
  }

  /** measure()'s writing half: the spacers above and below the drawn cards. */
  placeSpacers(): void {
    this.before.style.height = `${this.offsets[this.from]}px`;
    this.after.style.height = `${Math.max(0, this.offsets[this.entries.length] - this.offsets[this.to])}px`;
  }

  /**
   * The running sums, from entry `from` on (the heights before it unchanged). Kept in the
   * same array while the column's length is the same: a new one on every key was, in a 100,000-card
   * tree, megabytes of buffers a key for the garbage collector (issue 27).
   */
  private sum(from = 0): void {
    const n = this.entries.length;
    if (this.offsets.length !== n + 1) {
      this.offsets = new Float64Array(n + 1);
      from = 0;
    }
    const offsets = this.offsets;
    for (let i = from; i < n; i++) {
      const entry = this.entries[i];
      offsets[i + 1] = offsets[i] + this.heights[i] + (entry.index === entry.count - 1 ? GROUP_GAP : 0);
    }
  }

  private reindex(): void {
    this.indexOf.clear();
    this.entries.forEach((entry, index) => this.indexOf.set(entry.card._id, index));
  }

  private groupElement(key: string): HTMLElement {
    let group = this.groups.get(key);
    if (!group) {
      group = h("div", { class: "group", role: "group", "data-parent-id": key });
      this.groups.set(key, group);
    }
    return group;
  }

  private paintGroups(): void {
    const activeParent = this.hooks.activeParent();
    for (const [key, group] of this.groups) {
      group.classList.toggle("active-group", activeParent !== null && key === activeParent);
      group.classList.toggle("lit-group", key !== "" && this.hooks.role(key) !== undefined);
    }
  }
}

/** A card's height before it is drawn, from its text: close enough to scroll by. */
function estimateHeight(content: string, width: number, fontSize: number): number {
  const perLine = Math.max(16, Math.floor((width - 40) / (fontSize * 0.5)));
  let lines = 0;
  let start = 0;
  while (start <= content.length) {
    let end = content.indexOf("\n", start);
    if (end < 0) end = content.length;
    const length = end - start;
    lines += length === 0 ? 0.6 : Math.ceil(length / perLine);
    start = end + 1;
  }
  return Math.round(29 + Math.max(1, lines) * fontSize * 1.55);
}
