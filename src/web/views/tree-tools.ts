/**
 * The writer's tools around the columns: the search box (`/` or `key:search`: the columns
 * show only the matching cards and their ancestors, matches marked; Enter goes to the first
 * match, Escape ends the search) and the word counts under the columns (the active card, its
 * subtree, its column, the tree, and the words added since the tree was opened here).
 */
import type { Card } from "../../shared/records.js";
import type { AppBus } from "../bus.js";
import type { OpenTree } from "../controller/tree-controller.js";
import { h } from "../dom.js";
import { formatCount } from "./progress.js";
import { cardCharacters, cardWords, countCharacters, countWords, searchCards, sumWords } from "../model/text-stats.js";

export function mountTools(bus: AppBus, main: HTMLElement, controller: OpenTree): void {
  const search = searchBar(bus, controller);
  const words = wordCounts(bus, controller);
  main.prepend(search);
  main.append(words);
  // A new font size or theme changes every card's height: measure and place them again.
  bus.on("preferences:change", () => controller.relayout(), controller);
}

function searchBar(bus: AppBus, controller: OpenTree): HTMLElement {
  const input = h("input", { type: "search", class: "input search-input", placeholder: "Search cards", "aria-label": "Search cards", autocomplete: "off" });
  const count = h("span", { class: "search-count", "aria-live": "polite" });
  const close = h("button", { type: "button", class: "button button-quiet button-small", onclick: () => end() }, "Clear");
  const bar = h("form", { class: "search-bar", role: "search", hidden: true }, input, count, close);
  let timer: number | undefined;
  let first: string | null = null;

  const run = () => {
    const query = input.value;
    if (query.trim() === "") {
      controller.showOnly(null, null);
      count.textContent = "";
      first = null;
      return;
    }
    const { matches, shown } = searchCards(controller.cards, query);
    controller.showOnly(shown, new Set(matches.map((card) => card._id)));
    count.textContent = matches.length === 0 ? "No match" : `${matches.length} card${matches.length === 1 ? "" : "s"}`;
    first = matches[0]?._id ?? null;
    if (first && !shown.has(controller.activeId ?? "")) controller.activate(first, { focus: false });
    bus.trigger("search:results", query, matches.map((card) => card._id));
  };
  const end = () => {
    input.value = "";
    run();
    bar.hidden = true;
    controller.activate(controller.activeId);
  };
  input.addEventListener("input", () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(run, 80);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      end();
    } else if (event.key === "ArrowDown") {
      event.preventDefault();
      controller.focusActive();
    }
  });
  bar.addEventListener("submit", (event) => {
    event.preventDefault();
    window.clearTimeout(timer);
    run();
    // Enter: to the first match, keys back on the (filtered) tree.
    if (first) controller.activate(first);
  });
  bus.on("key:search", () => {
    bar.hidden = false;
    input.focus();
    input.select();
  }, controller);
  bus.on("key:clearSearch", () => end(), controller);
  bus.on("tree:change", () => input.value.trim() !== "" && run(), controller);
  return bar;
}

function wordCounts(bus: AppBus, controller: OpenTree): HTMLElement {
  const state = controller.cards;
  const cells = {
    card: h("span", {}),
    subtree: h("span", {}),
    column: h("span", {}),
    tree: h("span", {}),
    session: h("span", {}),
    cardChars: h("span", {}),
    subtreeChars: h("span", {}),
  };
  const label = (name: string, cell: HTMLElement) => h("span", { class: "wordcount-item" }, `${name} `, cell);
  const footer = h(
    "footer",
    { class: "wordcount", "aria-label": "Word counts" },
    label("Card", cells.card),
    label("Subtree", cells.subtree),
    label("Column", cells.column),
    label("Tree", cells.tree),
    label("This session", cells.session),
    label("Card characters", cells.cardChars),
    label("Subtree characters", cells.subtreeChars),
  );
  let atOpen: number | null = null;
  let scheduled = false;
  let treeTotal: number | null = null;
  // The tree's and the columns' sums stand until a card changes: moving from card to card in
  // a 100,000-card tree (issue 27) must not read every card again on each key.
  let stale = true;
  const columnSums = new Map<number, Promise<number>>();
  // Not toLocaleString: its first call loads number-format data, tens of ms while a tree opens.
  const format = formatCount;
  // Which update last began: an earlier one still summing a subtree stops, and leaves the cells to it.
  let updates = 0;
  const update = async () => {
    scheduled = false;
    const run = ++updates;
    const current = () => run === updates;
    const active = controller.activeCard();
    const editing = controller.editorText();
    const own = active ? (editing?.card === active ? countWords(editing.text) : cardWords(active)) : 0;
    cells.card.textContent = format(own);
    const ownChars = active ? countCharacters(editing?.card === active ? editing.text : active.content) : 0;
    cells.cardChars.textContent = format(ownChars);
    // The first card of a 100,000-card tree has ~9,000 descendants and thousands of cards
    // beside it: their first sums, in one task, were one of 100-200 ms right after the open (issue 27).
    const descendants = active ? state.descendants(active._id) : [];
    const subtreeWords = await sumInSlices(descendants, cardWords, current);
    const subtreeChars = current() ? await sumInSlices(descendants, cardCharacters, current) : 0;
    const column = active && current() ? await columnWords(active._id) : 0;
    if (!current()) return;
    cells.subtree.textContent = format(own + subtreeWords);
    cells.subtreeChars.textContent = format(ownChars + subtreeChars);
    cells.column.textContent = format(column);
    void countTree().then((tree) => {
      atOpen ??= tree;
      cells.tree.textContent = format(tree);
      const session = tree - atOpen;
      cells.session.textContent = `${session >= 0 ? "+" : "−"}${format(Math.abs(session))}`;
    });
  };
  // The first count of a big tree reads every card: in slices, so the page never stalls.
  // Later counts reuse each card's cached count and only recount changed cards.
  let firstCount: Promise<number> | null = null;
  // A change empties the map, so a sum begun before it is never read after it.
  const columnWords = (id: string): Promise<number> => {
    const depth = state.depth(id);
    let sum = columnSums.get(depth);
    if (sum === undefined) columnSums.set(depth, (sum = sumInSlices(state.column(id), cardWords)));
    return sum;
  };
  const countTree = (): Promise<number> => {
    const cards = () => state.treeOrder().map((entry) => entry.card);
    if (treeTotal !== null) {
      if (stale) treeTotal = sumWords(cards());
      stale = false;
      return Promise.resolve(treeTotal);
    }
    if (firstCount === null) {
      stale = false;
      firstCount = sumInSlices(cards(), cardWords).then((total) => (treeTotal = total));
    }
    return firstCount;
  };
  // Counting waits for a quiet moment: a key press must not pay for a 20,000-card sum. The
  // first count waits for the open to end (`tree:load`: the first screen drawn, the page
  // answering keys): in a 100,000-card tree its sums (the first card's subtree, ~9,000 cards)
  // were tens of milliseconds of CPU between the last slice and the first screen (issue 27).
  let opened = false;
  const schedule = () => {
    if (scheduled || !opened) return;
    scheduled = true;
    window.setTimeout(() => void update(), 120);
  };
  const changed = () => {
    stale = true;
    columnSums.clear();
    schedule();
  };
  bus.on("card:activate", schedule, controller);
  bus.on(["tree:change", "remote:change", "card:edit", "card:save", "card:cancel"], changed, controller);
  document.addEventListener("input", (event) => (event.target as Element | null)?.closest?.(".card-editor") && changed(), { signal: controller.signal });
  bus.on("key:wordcount", () => footer.classList.toggle("wordcount-hidden"), controller);
  bus.on(
    "tree:load",
    () => {
      opened = true;
      schedule();
    },
    controller,
  );
  return footer;
}

/**
 * The sum of `count` over `cards`, 8 ms of it a task, so a big tree's first count never stalls
 * the page. It stops between two tasks once `wanted` says no (its total is then a part).
 */
async function sumInSlices(cards: Card[], count: (card: Card) => number, wanted: () => boolean = () => true): Promise<number> {
  let total = 0;
  for (let i = 0; i < cards.length; ) {
    const until = performance.now() + 8;
    do for (const end = Math.min(cards.length, i + 200); i < end; i++) total += count(cards[i]);
    while (i < cards.length && performance.now() < until);
    if (i < cards.length) await new Promise((resolve) => window.setTimeout(resolve, 0));
    if (!wanted()) break;
  }
  return total;
}
