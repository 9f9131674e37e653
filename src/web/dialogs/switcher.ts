/**
 * The quick switcher (Ctrl+O, `modal:show:switcher`): every tree the user can open, most
 * recently edited first; typing filters them by name (each word, in any order), Up/Down
 * choose, Enter opens the chosen one, Escape closes. A combobox with a list box (ARIA's
 * pattern), so a screen reader follows the choice while the focus stays in the text field.
 */
import { describeError, type Tree } from "../api.js";
import type { AppContext } from "../context.js";
import { h } from "../dom.js";
import { openModal } from "./modal.js";

/** Trees whose name holds every word of `query` (case and accents aside), in the given order. */
export function filterTrees(trees: Tree[], query: string): Tree[] {
  const fold = (text: string) => text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
  const words = fold(query).split(/\s+/).filter(Boolean);
  return trees.filter((tree) => words.every((word) => fold(tree.name).includes(word)));
}

export function showSwitcher(app: AppContext, currentTreeId: string | null): void {
  const modal = openModal({ title: "Open a tree", className: "dialog-medium switcher-dialog" });
  const listId = "switcher-list";
  const input = h("input", {
    type: "text",
    class: "input switcher-input",
    role: "combobox",
    "aria-label": "Tree name",
    "aria-autocomplete": "list",
    "aria-expanded": "true",
    "aria-controls": listId,
    autocomplete: "off",
    placeholder: "Type to filter your trees",
  });
  const list = h("ul", { class: "switcher-list", id: listId, role: "listbox", "aria-label": "Your trees" });
  const status = h("p", { class: "field-hint switcher-status", role: "status" }, "Loading your trees…");
  modal.body.append(input, status, list);
  modal.footer.append(h("p", { class: "field-hint switcher-keys" }, "↑ ↓ to choose · Enter to open · Esc to close"));

  let trees: Tree[] = [...app.trees.values()].sort(byEdited);
  let shown: Tree[] = [];
  let chosen = 0;

  const open = (tree: Tree | undefined) => {
    if (!tree) return;
    modal.close();
    if (tree._id !== currentTreeId) app.bus.trigger("ui:navigate", `/trees/${tree._id}`);
  };

  const draw = () => {
    shown = filterTrees(trees, input.value);
    chosen = Math.min(chosen, Math.max(0, shown.length - 1));
    list.replaceChildren(
      ...shown.map((tree, index) =>
        h(
          "li",
          {
            id: `switcher-${tree._id}`,
            class: "switcher-option",
            role: "option",
            "aria-selected": String(index === chosen),
            "data-tree-id": tree._id,
            onclick: () => open(tree),
          },
          h("span", { class: "switcher-name" }, tree.name),
          tree._id === currentTreeId ? h("span", { class: "switcher-note" }, " (open now)") : null,
        ),
      ),
    );
    const active = shown[chosen];
    if (active) {
      input.setAttribute("aria-activedescendant", `switcher-${active._id}`);
      list.children[chosen]?.scrollIntoView({ block: "nearest" });
    } else input.removeAttribute("aria-activedescendant");
    status.textContent = shown.length === 0 ? (trees.length === 0 ? "No trees yet." : "No tree has that name.") : `${shown.length} tree${shown.length === 1 ? "" : "s"}`;
  };

  input.addEventListener("input", () => {
    chosen = 0;
    draw();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (shown.length === 0) return;
      chosen = (chosen + (event.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
      draw();
    } else if (event.key === "Enter") {
      event.preventDefault();
      open(shown[chosen]);
    }
  });
  draw();
  input.focus();
  app.api.trees().then(
    (fresh) => {
      for (const tree of fresh) app.trees.set(tree._id, tree);
      trees = fresh.sort(byEdited);
      draw();
    },
    // Offline: the trees this page already knows.
    (error: unknown) => {
      if (trees.length === 0) status.textContent = describeError(error);
    },
  );
}

function byEdited(a: Tree, b: Tree): number {
  return b.updatedAt.localeCompare(a.updatedAt);
}
