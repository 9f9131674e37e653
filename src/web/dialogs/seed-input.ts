/**
 * The "paste or choose a file" control shared by the new-tree and import dialogs. A chosen
 * file's text is loaded into the textarea, so the writer sees what will be imported and can
 * still edit it.
 */
import { h } from "../dom.js";
import { IMPORT_ACCEPT } from "../views/file-drop.js";
import { field } from "./modal.js";

export interface SeedInput {
  element: HTMLElement;
  textarea: HTMLTextAreaElement;
  value(): string;
}

export function seedInput(label: string): SeedInput {
  const textarea = h("textarea", {
    class: "input seed-text",
    rows: 8,
    spellcheck: "false",
    placeholder: "# Chapter one\n\nSome text…\n\n## A scene\n\nMore text…",
  });
  const file = h("input", { type: "file", class: "file-input", accept: IMPORT_ACCEPT });
  const fileStatus = h("span", { class: "field-hint" });
  file.addEventListener("change", async () => {
    const chosen = file.files?.[0];
    if (!chosen) return;
    textarea.value = await chosen.text();
    fileStatus.textContent = `Loaded ${chosen.name}.`;
  });
  const element = h(
    "div",
    { class: "seed-input" },
    field(label, textarea, "Markdown headings become cards nested by level; JSON must look like Cardtree's JSON export; OPML outlines and Gingko Writer (.gkw) files keep their cards as they are."),
    h("div", { class: "file-row" }, h("label", { class: "button button-small", for: (file.id = `seed-file-${Date.now()}`) }, "Choose a file…"), file, fileStatus),
  );
  return { element, textarea, value: () => textarea.value };
}
