/**
 * The keyboard help overlay (`?`, or `modal:show:help`): every shortcut, read from the
 * keyboard's own binding table so the list cannot drift from what the keys do.
 */
import { h } from "../dom.js";
import { bindingsFor } from "../keyboard.js";
import { openModal } from "./modal.js";

const SECTIONS: { title: string; rows: [string, string][] }[] = [
  {
    title: "Moving around",
    rows: [
      ["key:up", "Card above"],
      ["key:down", "Card below"],
      ["key:left", "Parent"],
      ["key:right", "First child"],
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
      ["key:fullscreen", "Write in full screen"],
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
  for (const section of SECTIONS) {
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
