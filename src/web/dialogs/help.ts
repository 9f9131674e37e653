/**
 * The keyboard help overlay (`?`, or `modal:show:help`): every shortcut, read from the
 * keyboard's own binding table so the list cannot drift from what the keys do.
 */
import { h } from "../dom.js";
import type { ActionEvent } from "../events.js";
import { bindingsFor } from "../keyboard.js";
import { openModal } from "./modal.js";

export const HELP_SECTIONS: { title: string; rows: [ActionEvent, string][] }[] = [
  {
    title: "Moving around",
    rows: [
      ["key:up", "Card above"],
      ["key:down", "Card below"],
      ["key:left", "Parent"],
      ["key:right", "First child"],
      ["key:first", "First card of the column"],
      ["key:last", "Last card of the column"],
      ["key:pageUp", "A screen up the column"],
      ["key:pageDown", "A screen down the column"],
      ["key:search", "Search: show only matching cards"],
      ["key:wordcount", "Show or hide the word counts"],
    ],
  },
  {
    title: "Writing",
    rows: [
      ["key:edit", "Edit the active card"],
      ["key:save", "Save and stop editing"],
      ["key:cancel", "Stop editing without saving"],
      ["key:bold", "Bold (while editing)"],
      ["key:italic", "Italic (while editing)"],
      ["key:editFullscreen", "Write the active card in full screen"],
      ["key:fullscreen", "Full screen on or off (while editing)"],
      ["key:split:down", "Split at the caret: the rest to a new card below"],
      ["key:split:up", "Split at the caret: the text before to a new card above"],
      ["key:split:right", "Split at the caret: the rest to a new child"],
    ],
  },
  {
    title: "Adding and arranging",
    rows: [
      ["key:addDown", "New card below"],
      ["key:addUp", "New card above"],
      ["key:addRight", "New child card"],
      ["key:moveUp", "Move card up"],
      ["key:moveDown", "Move card down"],
      ["key:moveLeft", "Move card left (out of its parent)"],
      ["key:moveRight", "Move card right (into the card above)"],
      ["key:delete", "Delete card (asks when it has children)"],
      ["key:merge:down", "Merge with the card below"],
      ["key:merge:up", "Merge with the card above"],
      ["key:copy", "Copy the card and its subtree (also as Markdown)"],
      ["key:cut", "Cut the card and its subtree"],
      ["key:paste", "Paste below the active card"],
      ["key:paste:child", "Paste as a child of the active card"],
    ],
  },
  {
    title: "Undo and history",
    rows: [
      ["key:undo", "Undo your last change in this tab (not while editing: there it undoes typing)"],
      ["key:redo", "Redo what you undid"],
      ["modal:show:history", "History: the tree's changes, the card's versions, the trash"],
      ["modal:show:switcher", "Open another tree: type to filter, Enter opens (on every page)"],
      ["modal:show:help", "This help"],
    ],
  },
];

const KEY_NAMES: Record<string, string> = {
  ctrl: "Ctrl",
  command: "⌘",
  alt: "Alt",
  shift: "Shift",
  enter: "Enter",
  escape: "Esc",
  backspace: "Backspace",
  delete: "Delete",
  up: "↑",
  home: "Home",
  end: "End",
  pageup: "PgUp",
  pagedown: "PgDn",
  down: "↓",
  left: "←",
  right: "→",
};

function keyLabel(combo: string): HTMLElement {
  return h(
    "span",
    { class: "combo" },
    combo.split("+").map((part) => h("kbd", {}, KEY_NAMES[part] ?? part.toUpperCase())),
  );
}

export function showHelpDialog(): void {
  const modal = openModal({ title: "Keyboard shortcuts", className: "dialog-wide help-dialog" });
  // The list scrolls and holds nothing focusable: it takes the focus itself, so the keys scroll it.
  modal.body.tabIndex = 0;
  modal.body.setAttribute("role", "region");
  modal.body.setAttribute("aria-label", "Shortcuts");
  for (const section of HELP_SECTIONS) {
    modal.body.append(
      h(
        "section",
        { class: "help-section" },
        h("h3", {}, section.title),
        h(
          "dl",
          { class: "help-list" },
          section.rows.map(([event, label]) => {
            // ⌘ variants are for Macs; listing both doubles every row for nobody.
            const combos = bindingsFor(event).filter((combo) => !combo.startsWith("command"));
            return [h("dt", {}, combos.map(keyLabel)), h("dd", {}, label)];
          }).flat(),
        ),
      ),
    );
  }
  modal.body.append(
    h(
      "p",
      { class: "field-hint" },
      "Click a card to select it, double-click to edit it, drag it to move it. Scripts can use window.app, window.Backbone and window.Mousetrap (see docs/scripting.md).",
    ),
  );
  const close = h("button", { type: "button", class: "button button-primary", onclick: () => modal.close() }, "Close");
  modal.footer.append(close);
  close.focus();
}
