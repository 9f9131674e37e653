/**
 * The history panel (SPEC §8, §10), key `h` or the toolbar's History: three tabs in one
 * dialog (focus stays inside, Escape closes, focus returns to the tree).
 * - Changes: the tree's changes, newest first (who, when, what kind, which cards by their
 *   first words), fifty at a time with "Older changes"; undos and redos in a row of the same
 *   cards folded into one line that opens to show them; choosing one shows each card's text before and after it with
 *   the changed lines marked, and "Restore the tree to this point".
 * - This card: the active card's versions, each with what it changed from the one before,
 *   and "Restore this version", which saves the old text as a new edit (a PUT, so it is
 *   undoable like any edit, and collaborators see it).
 * - Trash: deleted subtrees with "Restore" (back at their old place).
 * It refreshes when a collaborator's change arrives (`remote:change`).
 */
import type { ApiClient, Card, CardVersion, Collaborator, HistoryEntry, TrashEntry } from "../api.js";
import { describeError } from "../api.js";
import type { AppBus } from "../bus.js";
import { confirmDialog } from "../dialogs/confirm.js";
import { openModal } from "../dialogs/modal.js";
import { h } from "../dom.js";
import { cardTitle } from "../markdown.js";
import { notify } from "../notify.js";
import { lineDiff } from "./diff.js";
import "../shared-chunk.js";

/** What the panel needs of the open tree. */
export interface HistoryTarget {
  readonly tree: { _id: string };
  activeCard(): Card | undefined;
  /** Saves `text` as the card's content, as an edit of this tab. */
  applyContent(card: Card, text: string): Promise<void>;
  /** Shows cards as the server has them now, writing nothing back. */
  applyServerChange(change: { revision: number; cards: Card[]; deleted: string[] }): void;
  /** Cards on screen now, to tell which ones a restore took away. */
  cardIds(): string[];
}

type Tab = "changes" | "card" | "trash";

const KIND_WORDS: Record<string, string> = {
  "tree.create": "created the tree",
  "tree.update": "renamed or set up the tree",
  "tree.share": "changed who has access",
  "card.create": "added a card",
  "card.update": "edited",
  "card.move": "moved",
  "card.delete": "deleted",
  import: "imported",
  "restore.card": "restored from the trash",
  "restore.tree": "restored the tree to an earlier point",
  revert: "undid or redid a change",
};

export function showHistoryPanel(options: { bus: AppBus; api: ApiClient; target: HistoryTarget; userId: string | null; tab?: Tab }): void {
  const { bus, api, target } = options;
  const treeId = target.tree._id;
  const listeners = {};
  const modal = openModal({ title: "History", className: "dialog-wide history-panel", onClose: () => bus.offAll(listeners) });
  let people = new Map<string, string>();
  void api.collaborators(treeId).then(
    (list: Collaborator[]) => (people = new Map(list.map((c) => [c._id, c.email]))),
    () => undefined,
  );
  const who = (userId: string | null) => (userId === null ? "the operator" : userId === options.userId ? "you" : (people.get(userId) ?? "a collaborator"));

  const tabs: Record<Tab, HTMLButtonElement> = {
    changes: tabButton("changes", "Changes"),
    card: tabButton("card", "This card"),
    trash: tabButton("trash", "Trash"),
  };
  const panel = h("div", { class: "history-tabpanel", role: "tabpanel", id: "history-tabpanel", tabindex: "-1" });
  modal.body.append(h("div", { class: "history-tabs", role: "tablist", "aria-label": "History views" }, Object.values(tabs)), panel);
  let current: Tab = options.tab ?? "changes";

  function tabButton(tab: Tab, label: string): HTMLButtonElement {
    return h("button", { type: "button", role: "tab", class: "history-tab", id: `history-tab-${tab}`, "aria-controls": "history-tabpanel", onclick: () => select(tab) }, label);
  }

  function select(tab: Tab): void {
    current = tab;
    for (const [name, button] of Object.entries(tabs) as [Tab, HTMLButtonElement][]) {
      button.setAttribute("aria-selected", String(name === tab));
      button.tabIndex = name === tab ? 0 : -1;
    }
    panel.setAttribute("aria-labelledby", `history-tab-${tab}`);
    void refresh();
  }

  // Arrow keys move between the tabs, as a tab list's do.
  modal.body.querySelector(".history-tabs")!.addEventListener("keydown", (event) => {
    const key = (event as KeyboardEvent).key;
    if (key !== "ArrowLeft" && key !== "ArrowRight") return;
    const order: Tab[] = ["changes", "card", "trash"];
    const next = order[(order.indexOf(current) + (key === "ArrowRight" ? 1 : order.length - 1)) % order.length]!;
    select(next);
    tabs[next].focus();
  });

  async function refresh(): Promise<void> {
    const tab = current;
    panel.setAttribute("aria-busy", "true");
    try {
      const content = tab === "changes" ? await changesView() : tab === "card" ? await cardView() : await trashView();
      if (tab === current) panel.replaceChildren(content);
    } catch (error) {
      if (tab === current) panel.replaceChildren(h("p", { class: "form-error", role: "alert" }, describeError(error)));
    } finally {
      panel.removeAttribute("aria-busy");
    }
  }

  // ---- Changes -------------------------------------------------------------------------

  async function changesView(): Promise<HTMLElement> {
    const list = h("ol", { class: "history-list", "aria-label": "Changes, newest first" });
    const detail = h("section", { class: "history-detail", "aria-live": "polite" });
    const more = h("button", { type: "button", class: "button button-small history-more" }, "Older changes");
    const entries: HistoryEntry[] = [];
    let oldest: number | undefined;
    const load = async () => {
      const page = await api.history(treeId, oldest);
      entries.push(...page);
      // Drawn again whole: a run of undos and redos may go on across the pages.
      list.replaceChildren(...foldReverts(entries).map((run) => (run.length === 1 ? changeRow(run[0]!, detail) : foldedRow(run, detail))));
      oldest = page[page.length - 1]?.revision;
      more.hidden = page.length < 50 || oldest === 1;
    };
    more.addEventListener("click", () => void load().catch((error) => notify(describeError(error), { kind: "error" })));
    await load();
    return h("div", { class: "history-columns" }, h("div", { class: "history-list-wrap" }, list, more), detail);
  }

  function changeRow(entry: HistoryEntry, detail: HTMLElement): HTMLElement {
    const button = h(
      "button",
      { type: "button", class: "history-entry", "data-revision": entry.revision, onclick: () => void showChange(entry, detail, button) },
      h("span", { class: "history-entry-what" }, `#${entry.revision} ${KIND_WORDS[entry.kind] ?? entry.kind}`, namedCards(entry)),
      h("span", { class: "history-entry-meta" }, `${who(entry.userId)}, ${when(entry.at)}`),
    );
    return h("li", {}, button);
  }

  /** Undos and redos in a row, by one person, of the same cards: one line, opened to show each. */
  function foldedRow(run: HistoryEntry[], detail: HTMLElement): HTMLElement {
    const newest = run[0]!;
    const oldestOfRun = run[run.length - 1]!;
    const summary = h(
      "summary",
      { class: "history-entry history-fold-summary" },
      h("span", { class: "history-entry-what" }, `#${oldestOfRun.revision}–${newest.revision} undid and redid (${run.length} changes)`, namedCards(newest)),
      h("span", { class: "history-entry-meta" }, `${who(newest.userId)}, ${when(oldestOfRun.at)} to ${when(newest.at)}`),
    );
    return h("li", { class: "history-fold" }, h("details", {}, summary, h("ol", { class: "history-list history-fold-list", "aria-label": `${run.length} undos and redos` }, run.map((entry) => changeRow(entry, detail)))));
  }

  async function showChange(entry: HistoryEntry, detail: HTMLElement, button: HTMLElement): Promise<void> {
    for (const other of panel.querySelectorAll(".history-entry[aria-current]")) other.removeAttribute("aria-current");
    button.setAttribute("aria-current", "true");
    detail.replaceChildren(h("p", {}, "Loading…"));
    const restore = h(
      "button",
      { type: "button", class: "button button-primary history-restore-tree", onclick: () => void restoreTree(entry.revision) },
      "Restore the tree to this point",
    );
    const heading = h("h3", {}, `Change #${entry.revision}: ${KIND_WORDS[entry.kind] ?? entry.kind}`, namedCards(entry));
    const meta = h("p", { class: "history-entry-meta" }, `${who(entry.userId)}, ${when(entry.at)}`);
    const cards = await Promise.all(entry.cardIds.slice(0, 20).map((id) => cardDiff(id, entry.at)));
    detail.replaceChildren(heading, meta, ...cards);
    if (entry.cardIds.length > 20) detail.append(h("p", {}, `And ${entry.cardIds.length - 20} more cards.`));
    detail.append(h("div", { class: "history-actions" }, restore));
  }

  /** One card's text before and after the change made at `at`. */
  async function cardDiff(cardId: string, at: string): Promise<HTMLElement> {
    let versions: CardVersion[] = [];
    try {
      versions = await api.cardVersions(treeId, cardId);
    } catch {
      // A card of a change the log no longer has: shown without its text.
    }
    const index = versions.findIndex((v) => v.at === at);
    const after = index >= 0 ? versions[index]!.content : "";
    const before = index >= 0 && index + 1 < versions.length ? versions[index + 1]!.content : index >= 0 && versions[index]!.__v === 0 ? "" : after;
    return h("div", { class: "history-card" }, h("h4", {}, cardTitle(after || before) || "(empty card)"), lineDiff(before, after));
  }

  async function restoreTree(revision: number): Promise<void> {
    const yes = await confirmDialog({
      title: "Restore the tree?",
      message: `The whole tree goes back to how it was after change #${revision}. This is a new change: the changes since stay in the history, and you can restore them too.`,
      confirmLabel: "Restore the tree",
    });
    if (!yes) return;
    try {
      const tree = await api.restoreTree(treeId, revision);
      const cards = await api.cards(treeId);
      const now = new Set(cards.map((c) => c._id));
      target.applyServerChange({ revision: tree.revision ?? 0, cards, deleted: target.cardIds().filter((id) => !now.has(id)) });
      notify(`The tree is as it was after change #${revision}.`, { kind: "success" });
      void refresh();
    } catch (error) {
      notify(`Couldn't restore the tree: ${describeError(error)}`, { kind: "error" });
    }
  }

  // ---- This card -----------------------------------------------------------------------

  async function cardView(): Promise<HTMLElement> {
    const card = target.activeCard();
    if (!card) return h("p", {}, "Select a card to see its versions.");
    const versions = await api.cardVersions(treeId, card._id);
    if (versions.length === 0) return h("p", {}, "This card has no earlier versions yet.");
    const list = h("ol", { class: "history-versions", "aria-label": `Versions of “${cardTitle(card.content) || "this card"}”, newest first` });
    versions.forEach((version, i) => {
      const previous = versions[i + 1]?.content ?? "";
      const isCurrent = version.content === card.content && i === 0;
      list.append(
        h(
          "li",
          { class: "history-version", "data-version": version.__v },
          h("p", { class: "history-entry-meta" }, `Version ${version.__v}: ${who(version.userId)}, ${when(version.at)}${isCurrent ? " (now)" : ""}`),
          lineDiff(previous, version.content),
          isCurrent
            ? null
            : h("button", { type: "button", class: "button button-small history-restore-version", onclick: () => void restoreVersion(card, version) }, "Restore this version"),
        ),
      );
    });
    return list;
  }

  async function restoreVersion(card: Card, version: CardVersion): Promise<void> {
    try {
      await target.applyContent(card, version.content);
      bus.trigger("card:save", card._id, version.content);
      notify(`Version ${version.__v} restored.`, { kind: "success" });
      void refresh();
    } catch (error) {
      notify(`Couldn't restore the version: ${describeError(error)}`, { kind: "error" });
    }
  }

  // ---- Trash ---------------------------------------------------------------------------

  async function trashView(): Promise<HTMLElement> {
    const trash = await api.trash(treeId);
    if (trash.length === 0) return h("p", {}, "The trash is empty.");
    return h("ol", { class: "history-trash", "aria-label": "Deleted cards, newest first" }, trash.map(trashRow));
  }

  function trashRow(entry: TrashEntry): HTMLElement {
    const title = cardTitle(entry.card.content) || "(empty card)";
    return h(
      "li",
      { class: "history-trash-entry", "data-card": entry.card._id },
      h("span", { class: "history-entry-what" }, `${title}${entry.count > 1 ? ` and ${entry.count - 1} card${entry.count === 2 ? "" : "s"} under it` : ""}`),
      h("span", { class: "history-entry-meta" }, `deleted by ${who(entry.userId)}, ${when(entry.at)}`),
      h("button", { type: "button", class: "button button-small", "aria-label": `Restore “${title}”`, onclick: () => void restoreCard(entry) }, "Restore"),
    );
  }

  async function restoreCard(entry: TrashEntry): Promise<void> {
    try {
      const cards = await api.restoreCard(treeId, entry.card._id);
      target.applyServerChange({ revision: 0, cards, deleted: [] });
      notify(`Restored ${cards.length} card${cards.length === 1 ? "" : "s"}.`, { kind: "success" });
      void refresh();
    } catch (error) {
      notify(`Couldn't restore: ${describeError(error)}`, { kind: "error" });
    }
  }

  bus.on("remote:change", () => void refresh(), listeners);
  select(current);
  tabs[current].focus();
}

/** “First words” of the change's cards: up to three named, then how many more. */
function namedCards(entry: HistoryEntry): HTMLElement | string {
  const titles = entry.titles ?? [];
  if (titles.length === 0) return "";
  const shown = titles.slice(0, titles.length > 3 ? 2 : 3).map((title) => `“${title}”`);
  const rest = titles.length - shown.length;
  const words = rest > 0 ? `${shown.join(", ")} and ${rest} more card${rest === 1 ? "" : "s"}` : shown.length > 1 ? `${shown.slice(0, -1).join(", ")} and ${shown[shown.length - 1]}` : shown[0]!;
  return h("span", { class: "history-entry-cards" }, ` ${words}`);
}

/**
 * The entries (newest first) in runs: consecutive reverts (undos and redos) by one person of
 * the same cards make one run, every other entry a run of its own. An undo and its redo
 * touch the same cards, so the pairs a writer makes while trying things fold into one line.
 */
export function foldReverts(entries: HistoryEntry[]): HistoryEntry[][] {
  const runs: HistoryEntry[][] = [];
  const key = (entry: HistoryEntry) => `${entry.userId}|${[...entry.cardIds].sort().join(",")}`;
  for (const entry of entries) {
    const last = runs[runs.length - 1];
    const previous = last?.[last.length - 1];
    if (entry.kind === "revert" && previous?.kind === "revert" && key(previous) === key(entry)) last!.push(entry);
    else runs.push([entry]);
  }
  return runs;
}

function when(at: string): string {
  const date = new Date(at);
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}
