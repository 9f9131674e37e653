/**
 * Appearance (`modal:show:appearance`): theme, card font size and typefaces (headings, text,
 * code: the system's or one shipped with the app, OpenDyslexic among them), applied as they are picked
 * and remembered for this user (preferences.ts).
 */
import type { AppContext } from "../context.js";
import { h } from "../dom.js";
import { FONT_SIZES, MONO_FONT_CHOICES, TEXT_FONT_CHOICES, THEME_CHOICES, type Preferences, type Theme } from "../preferences.js";
import { openModal } from "./modal.js";
import "../shared-chunk.js";

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
  const fontSelect = (id: string, choices: readonly { id: string; label: string }[], chosen: string) =>
    h("select", { class: "input", id }, choices.map((choice) => h("option", { value: choice.id, selected: choice.id === chosen }, choice.label)));
  const heading = fontSelect("font-heading", TEXT_FONT_CHOICES, current.headingFont);
  const body = fontSelect("font-body", TEXT_FONT_CHOICES, current.bodyFont);
  const mono = fontSelect("font-mono", MONO_FONT_CHOICES, current.monoFont);
  modal.body.append(
    h("fieldset", { class: "choices" }, h("legend", {}, "Theme"), themes),
    h("div", { class: "field" }, h("label", { for: "font-size" }, "Card text size"), size),
    h("div", { class: "field" }, h("label", { for: heading.id }, "Headings typeface"), heading),
    h("div", { class: "field" }, h("label", { for: body.id }, "Text typeface"), body),
    h("div", { class: "field" }, h("label", { for: mono.id }, "Code typeface"), mono),
  );
  modal.body.addEventListener("change", () => {
    const theme = modal.body.querySelector<HTMLInputElement>("input[name=theme]:checked")?.value as Theme;
    app.preferences.save({
      theme,
      fontSize: Number(size.value) as Preferences["fontSize"],
      headingFont: heading.value as Preferences["headingFont"],
      bodyFont: body.value as Preferences["bodyFont"],
      monoFont: mono.value as Preferences["monoFont"],
    });
  });
  const done = h("button", { type: "button", class: "button button-primary", onclick: () => modal.close() }, "Done");
  modal.footer.append(done);
  modal.body.querySelector<HTMLInputElement>("input[name=theme]:checked")?.focus();
}
