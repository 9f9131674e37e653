/**
 * The keyboard help overlay (`?`, or `modal:show:help`): every shortcut, read from the
 * keyboard's own binding table (with the user's own keys) so the list cannot drift from
 * what the keys do.
 */
import { h } from "../dom.js";
import type { ActionEvent } from "../events.js";
import { bindingsFor } from "../keyboard.js";
import { comboParts, SHORTCUTS } from "../../shared/shortcuts.js";
import { openModal } from "./modal.js";

/** The help's sections: every shortcut of shared/shortcuts.ts, in its order. */
export const HELP_SECTIONS: { title: string; rows: [ActionEvent, string][] }[] = (() => {
  const sections: { title: string; rows: [ActionEvent, string][] }[] = [];
  for (const shortcut of SHORTCUTS) {
    let section = sections.find((s) => s.title === shortcut.section);
    if (!section) sections.push((section = { title: shortcut.section, rows: [] }));
    section.rows.push([shortcut.event as ActionEvent, shortcut.label]);
  }
  return sections;
})();

export function keyLabel(combo: string): HTMLElement {
  return h(
    "span",
    { class: "combo" },
    comboParts(combo).map((part) => h("kbd", {}, part)),
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
            return [h("dt", { "data-event": event }, combos.length > 0 ? combos.map(keyLabel) : "none"), h("dd", {}, label)];
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
  // A link followed in the app (data-nav); the dialog closes as the page changes.
  modal.footer.append(h("a", { class: "button", href: "/settings/keys", "data-nav": true, onclick: () => modal.close() }, "Change the keys…"), close);
  close.focus();
}
