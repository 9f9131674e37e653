/**
 * The touch bar of a tree on a phone or tablet (shown by CSS on narrow or touch screens):
 * the everyday actions as buttons, and "More" for every other action the keyboard has,
 * read from the same table as the keyboard help so none is left out. Each button only
 * triggers its bus event, exactly as its key does.
 */
import type { AppContext } from "../context.js";
import { HELP_SECTIONS } from "../dialogs/help.js";
import { openModal } from "../dialogs/modal.js";
import { h } from "../dom.js";
import type { ActionEvent } from "../events.js";

const NAVIGATING: [ActionEvent, string, string][] = [
  ["key:left", "←", "Parent"],
  ["key:up", "↑", "Card above"],
  ["key:down", "↓", "Card below"],
  ["key:right", "→", "First child"],
  ["key:edit", "Edit", "Edit the active card"],
  ["key:addDown", "+↓", "New card below"],
  ["key:addRight", "+→", "New child card"],
];

const EDITING: [ActionEvent, string, string][] = [
  ["key:save", "Save", "Save and stop editing"],
  ["key:cancel", "Cancel", "Stop editing without saving"],
  ["key:split:down", "Split ↓", "Split at the caret: the rest to a new card below"],
  ["key:bold", "B", "Bold"],
];

/** Page-level actions the top bar holds on a wide screen, for the More sheet. */
const PAGE_ACTIONS: [ActionEvent, string][] = [
  ["modal:show:import", "Import"],
  ["modal:show:export", "Export"],
  ["modal:show:appearance", "Appearance"],
  ["modal:show:help", "Keyboard help"],
  ["ui:logout", "Log out"],
];

export function touchBar(app: AppContext, readOnly: boolean): HTMLElement {
  const button = ([event, text, label]: [ActionEvent, string, string], scope: string) =>
    h("button", { type: "button", class: `touch-button touch-${scope}`, "aria-label": label, title: label, onclick: () => app.bus.trigger(event) }, text);
  const bar = h(
    "nav",
    { class: "touch-bar", "aria-label": "Card actions" },
    NAVIGATING.filter(([event]) => !readOnly || !/edit|add/.test(event)).map((entry) => button(entry, "tree")),
    readOnly ? [] : EDITING.map((entry) => button(entry, "edit")),
    h("button", { type: "button", class: "touch-button touch-more", "aria-haspopup": "dialog", onclick: () => showMoreActions(app, readOnly) }, "More"),
  );
  // Buttons must not take the focus from the editor (its caret is what Split and Bold use).
  bar.addEventListener("pointerdown", (event) => event.preventDefault());
  return bar;
}

function showMoreActions(app: AppContext, readOnly: boolean): void {
  const modal = openModal({ title: "Actions", className: "dialog-medium more-actions" });
  const run = (event: ActionEvent) => {
    modal.close();
    app.bus.trigger(event);
  };
  const editing = app.keys.current === "editCard";
  for (const section of HELP_SECTIONS) {
    const rows = section.rows.filter(([event]) => event !== "modal:show:help" && (!readOnly || /up|down|left|right|first|last|page|search|wordcount|copy|fullscreen/.test(event)));
    modal.body.append(
      h("h3", { class: "more-heading" }, section.title),
      h(
        "div",
        { class: "more-grid" },
        rows.map(([event, label]) => h("button", { type: "button", class: "button", disabled: isEditOnly(event) && !editing, onclick: () => run(event) }, label)),
      ),
    );
  }
  modal.body.append(
    h("h3", { class: "more-heading" }, "This page"),
    h(
      "div",
      { class: "more-grid" },
      PAGE_ACTIONS.filter(([event]) => (!readOnly || event !== "modal:show:import") && (app.session.user !== null || event !== "ui:logout")).map(([event, label]) =>
        h("button", { type: "button", class: "button", onclick: () => run(event) }, label),
      ),
    ),
  );
  modal.footer.append(h("button", { type: "button", class: "button", onclick: () => modal.close() }, "Close"));
  modal.body.querySelector<HTMLButtonElement>("button:not(:disabled)")?.focus();
}

function isEditOnly(event: ActionEvent): boolean {
  return ["key:save", "key:cancel", "key:bold", "key:italic", "key:split:down", "key:split:up", "key:split:right"].includes(event);
}
