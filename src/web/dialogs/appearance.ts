/**
 * Appearance (`modal:show:appearance`): theme and card font size, applied as they are picked
 * and remembered for this user (preferences.ts).
 */
import type { AppContext } from "../context.js";
import { h } from "../dom.js";
import { FONT_SIZES, THEME_CHOICES, type Preferences, type Theme } from "../preferences.js";
import { openModal } from "./modal.js";

export function showAppearanceDialog(app: AppContext): void {
  const modal = openModal({ title: "Appearance", className: "dialog-small" });
  const current = app.preferences.read();
  const themes = THEME_CHOICES.map(({ id, label }) =>
    h("label", { class: "choice" }, h("input", { type: "radio", name: "theme", value: id, checked: current.theme === id }), label),
  );
  const size = h(
    "select",
    { class: "input", id: "font-size" },
    FONT_SIZES.map((px) => h("option", { value: px, selected: px === current.fontSize }, `${px} px${px === 16 ? " (default)" : ""}`)),
  );
  modal.body.append(
    h("fieldset", { class: "choices" }, h("legend", {}, "Theme"), themes),
    h("div", { class: "field" }, h("label", { for: "font-size" }, "Card text size"), size),
  );
  modal.body.addEventListener("change", () => {
    const theme = modal.body.querySelector<HTMLInputElement>("input[name=theme]:checked")?.value as Theme;
    app.preferences.save({ theme, fontSize: Number(size.value) as Preferences["fontSize"] });
  });
  const done = h("button", { type: "button", class: "button button-primary", onclick: () => modal.close() }, "Done");
  modal.footer.append(done);
  modal.body.querySelector<HTMLInputElement>("input[name=theme]:checked")?.focus();
}
