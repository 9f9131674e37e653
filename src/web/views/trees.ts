/**
 * The logged-in home page: the user's trees, favourites first, searchable by name and sorted
 * by last edit, creation or name (the choice kept in this browser), each with its actions
 * (open, rename, copy, share, make public, delete or leave); files dropped on it become trees. Buttons only trigger bus events
 * (actions/tree-actions.ts does the work); the page redraws on the results. Above the list,
 * the words the server refused for good and this browser kept ("Words not saved",
 * offline/unsaved-words.ts), each to copy or download, and let go once the writer has them.
 */
import { ApiError, describeError, NetworkError, type Tree } from "../api.js";
import { deviceFor } from "../offline/device.js";
import { forgetUnsavedWords, unsavedWords, type UnsavedWords } from "../offline/unsaved-words.js";
import { confirmDialog } from "../dialogs/confirm.js";
import { copyText } from "../notify.js";
import { exportFilename } from "../../shared/file-names.js";
import type { AppBus } from "../bus.js";
import type { AppContext } from "../context.js";
import { publicLink } from "../dialogs/publish.js";
import { filterTrees } from "../dialogs/switcher.js";
import { h, mount, saveBlob } from "../dom.js";
import { rememberTrees } from "../actions/tree-actions.js";
import { acceptFileDrops } from "./file-drop.js";
import { topBar } from "./header.js";

export function renderTrees(app: AppContext, root: HTMLElement, context: object): void {
  const { bus } = app;
  const bar = topBar(app);
  const list = h("ul", { class: "tree-list", "aria-label": "Your trees" });
  const message = h("p", { class: "page-message", role: "status" }, "Loading your trees…");
  const newTree = h(
    "button",
    { type: "button", class: "button button-primary", onclick: () => bus.trigger("modal:show:new-tree") },
    "New tree",
  );
  const search = h("input", { type: "search", class: "input trees-search", id: "trees-search", placeholder: "Search by name", autocomplete: "off" });
  const order = h(
    "select",
    { class: "input trees-sort", id: "trees-sort" },
    SORTS.map(([value, label]) => h("option", { value, selected: value === savedSort() }, label)),
  );
  const found = h("p", { class: "field-hint trees-found", role: "status" });
  const main = h(
    "main",
    { class: "trees-page" },
    h("div", { class: "trees-heading" }, h("h1", {}, "Your trees"), newTree),
    h(
      "div",
      { class: "trees-tools" },
      h("label", { for: search.id, class: "trees-tool" }, "Search", search),
      h("label", { for: order.id, class: "trees-tool" }, "Sort by", order),
    ),
    unsavedSection(app.session.user?._id ?? null),
    found,
    message,
    list,
  );
  search.addEventListener("input", () => draw());
  order.addEventListener("change", () => {
    localStorage.setItem(SORT_KEY, order.value);
    draw();
  });
  acceptFileDrops(main, "Drop files to make a tree of each (Markdown, text, JSON, OPML, Gingko Writer)", (files) => bus.trigger("trees:import-files", files));
  mount(root, bar.element, main);
  document.title = "Your trees · Cardtree";

  let trees: Tree[] = [];
  const draw = () => {
    const user = app.session.user;
    const favorites = new Set(user?.favoriteTrees ?? []);
    const compare = COMPARE[order.value as Sort] ?? COMPARE.modified;
    // Favourites stay on top whatever the order; within each group, the chosen order.
    const sorted = filterTrees(trees, search.value).sort((a, b) => Number(favorites.has(b._id)) - Number(favorites.has(a._id)) || compare(a, b));
    list.replaceChildren(...sorted.map((tree) => treeItem(bus, tree, favorites.has(tree._id), tree.owner === user?._id)));
    message.hidden = trees.length > 0;
    message.textContent = "No trees yet. Create one to start writing.";
    const filtering = search.value.trim() !== "";
    found.hidden = !filtering;
    found.textContent = filtering ? (sorted.length === 0 ? "No tree has that name." : `${sorted.length} of ${trees.length} trees`) : "";
  };

  const device = app.session.user ? deviceFor(app.session.user._id) : null;
  const load = async () => {
    try {
      trees = await app.api.trees();
      rememberTrees(app, trees);
      draw();
      void device?.saveTreeList(trees).catch(() => undefined);
    } catch (error) {
      // Offline: the list as this browser last saw it; the trees kept here open offline.
      const unreachable = error instanceof NetworkError || (error instanceof ApiError && error.transient);
      const kept = unreachable ? await device?.loadTreeList().catch(() => null) : null;
      if (kept) {
        trees = kept;
        rememberTrees(app, trees);
        draw();
        message.hidden = false;
        // Say which it was: no network, or a server that answered with an error.
        message.textContent =
          error instanceof NetworkError
            ? "Offline: your trees as this browser last saw them. Those opened lately open offline too."
            : `${describeError(error)} Meanwhile, your trees as this browser last saw them.`;
        return;
      }
      message.textContent = describeError(error);
      message.classList.add("page-message-error");
    }
  };

  bus.on("tree:changed", (tree) => {
    trees = trees.map((t) => (t._id === tree._id ? tree : t));
    draw();
  }, context);
  bus.on("tree:created", (tree) => {
    trees = [tree, ...trees.filter((t) => t._id !== tree._id)];
    draw();
  }, context);
  bus.on(["tree:deleted", "tree:left"], (treeId) => {
    trees = trees.filter((t) => t._id !== treeId);
    draw();
  }, context);
  bus.on("user:changed", draw, context);
  void load();
}

type Sort = "modified" | "created" | "name";
const SORT_KEY = "cardtree:trees-sort";
const SORTS: [Sort, string][] = [
  ["modified", "Last edited"],
  ["created", "Newest first"],
  ["name", "Name"],
];
/**
 * Made on the first sort by name, not when the app's script is evaluated: making a collator
 * loads the browser's collation data, 7-12 ms of this machine's CPU (30-50 ms of a phone's)
 * inside the one task that evaluates the app's script on every page, the tree page's too
 * (issue 27, TBT).
 */
let collator: Intl.Collator | null = null;
const COMPARE: Record<Sort, (a: Tree, b: Tree) => number> = {
  modified: (a, b) => b.updatedAt.localeCompare(a.updatedAt),
  created: (a, b) => b.createdAt.localeCompare(a.createdAt),
  name: (a, b) => (collator ??= new Intl.Collator(undefined, { sensitivity: "base", numeric: true })).compare(a.name, b.name),
};

/** The order this browser last chose for the list (kept in localStorage). */
function savedSort(): Sort {
  const saved = localStorage.getItem(SORT_KEY);
  return SORTS.some(([value]) => value === saved) ? (saved as Sort) : "modified";
}

function treeItem(bus: AppBus, tree: Tree, favorite: boolean, owned: boolean): HTMLElement {
  const id = tree._id;
  const shared = tree.users.length > 1;
  const meta = [
    `Edited ${timeAgo(tree.updatedAt)}`,
    shared ? (owned ? `Shared with ${tree.users.length - 1}` : "Shared with you") : null,
  ].filter(Boolean);
  return h(
    "li",
    { class: "tree-item", "data-tree-id": id },
    h(
      "button",
      {
        type: "button",
        class: `star${favorite ? " star-on" : ""}`,
        "aria-pressed": String(favorite),
        "aria-label": favorite ? `Remove ${tree.name} from favourites` : `Add ${tree.name} to favourites`,
        title: favorite ? "Favourite" : "Mark as favourite",
        onclick: () => bus.trigger("trees:favorite", { treeId: id, favorite: !favorite }),
      },
      favorite ? "★" : "☆",
    ),
    h(
      "div",
      { class: "tree-main" },
      h("a", { class: "tree-name", href: `/trees/${id}`, "data-nav": true }, tree.name),
      h(
        "div",
        { class: "tree-meta" },
        meta.join(" · "),
        tree.publicUrl
          ? h("a", { class: "badge badge-public", href: `/p/${tree.publicUrl}`, "data-nav": true, title: publicLink(tree.publicUrl) }, "Public link")
          : null,
      ),
    ),
    h(
      "div",
      { class: "tree-actions" },
      action("Settings", () => bus.trigger("modal:show:rename-tree", id), "", "Tree settings: name and math"),
      action("Copy", () => bus.trigger("trees:copy", { treeId: id })),
      action("Share", () => bus.trigger("modal:show:collaborators", id)),
      owned ? action(tree.publicUrl ? "Public settings" : "Make public", () => bus.trigger("modal:show:publish", id)) : null,
      owned
        ? action("Delete", () => bus.trigger("modal:show:delete-tree", id), "button-danger-quiet")
        : action("Leave", () => bus.trigger("modal:show:collaborators", id)),
    ),
  );
}

function action(label: string, run: () => void, extra = "", title?: string): HTMLButtonElement {
  return h("button", { type: "button", class: `button button-quiet button-small ${extra}`, title: title ?? null, onclick: run }, label);
}

/** Relative time a writer reads at a glance ("5 min ago", "3 Mar"). */
function timeAgo(iso: string, now = Date.now()): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.max(0, Math.round((now - then) / 1000));
  if (seconds < 45) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const date = new Date(then);
  const sameYear = date.getFullYear() === new Date(now).getFullYear();
  return date.toLocaleDateString(undefined, sameYear ? { day: "numeric", month: "short" } : { dateStyle: "medium" });
}

/** The words kept for the signed-in writer, each with Copy, Download and "I have them"; nothing when none. */
function unsavedSection(userId: string | null): HTMLElement | string {
  if (userId === null || unsavedWords(userId).length === 0) return "";
  const list = h("ul", { class: "unsaved-list" });
  const section = h(
    "section",
    { class: "unsaved-words", "aria-labelledby": "unsaved-words-title" },
    h("h2", { id: "unsaved-words-title" }, "Words not saved"),
    h(
      "p",
      { class: "field-hint" },
      "The server refused these changes for good (their tree was deleted, or is no longer shared with you), so they are kept only in this browser. Copy or download each, then let it go.",
    ),
    list,
  );
  const draw = () => {
    const kept = unsavedWords(userId);
    section.hidden = kept.length === 0;
    list.replaceChildren(...kept.map((words) => unsavedItem(words, () => {
      forgetUnsavedWords(userId, words.id);
      draw();
    })));
  };
  draw();
  return section;
}

function unsavedItem(words: UnsavedWords, forget: () => void): HTMLElement {
  const when = new Date(words.at).toLocaleString([], { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
  const download = () => saveBlob(new Blob([words.text], { type: "text/markdown" }), exportFilename(`${words.treeName} - not saved`, "md"));
  const letGo = async () => {
    const sure = await confirmDialog({
      title: "Let these words go?",
      message: "They are kept nowhere else. Copy or download them first if you still want them.",
      confirmLabel: "Let them go",
      cancelLabel: "Keep them",
      danger: true,
    });
    if (sure) forget();
  };
  return h(
    "li",
    { class: "unsaved-item" },
    h("p", { class: "unsaved-meta" }, h("strong", {}, words.treeName), ` · ${when} · ${words.reason}`),
    h("pre", { class: "unsaved-text" }, words.text),
    h(
      "div",
      { class: "unsaved-actions" },
      h("button", { type: "button", class: "button button-small", onclick: () => copyText(words.text) }, "Copy"),
      h("button", { type: "button", class: "button button-small", onclick: download }, "Download"),
      h("button", { type: "button", class: "button button-small button-danger", onclick: () => void letGo() }, "Let go"),
    ),
  );
}
