/**
 * Export menu (`modal:show:export`): a format and a scope (whole tree, the active card with
 * what is under it, or the active card's column). Downloading is a plain link to
 * `GET /api/export/...`, so the browser's own download handling and the session cookie do
 * the rest.
 */
import { exportUrl, type ExportFormat } from "../api.js";
import { bus } from "../bus.js";
import { h } from "../dom.js";
import { cardTitle } from "../markdown.js";
import { openModal } from "./modal.js";

const FORMATS: { format: ExportFormat; label: string; hint: string }[] = [
  { format: "docx", label: "Word document", hint: ".docx with headings, lists and emphasis" },
  { format: "md", label: "Markdown", hint: "cards in order, separated by blank lines" },
  { format: "txt", label: "Plain text", hint: "the same, as .txt" },
  { format: "html", label: "Web page", hint: "one HTML page, ready to print" },
  { format: "impress", label: "Presentation", hint: ".pptx, one slide per card" },
  { format: "json", label: "JSON", hint: "the tree's structure, for import or backup" },
];

export function showExportDialog(
  treeId: string,
  active: { id: string; content: string; depth: number } | null,
): void {
  const modal = openModal({ title: "Export", className: "dialog-medium" });
  const formatChoices = FORMATS.map(({ format, label, hint }, index) =>
    h(
      "label",
      { class: "choice choice-format" },
      h("input", { type: "radio", name: "export-format", value: format, checked: index === 0 }),
      h("span", { class: "choice-label" }, label),
      h("span", { class: "choice-hint" }, hint),
    ),
  );
  const scopes: { value: string; label: string; disabled?: boolean }[] = [
    { value: "tree", label: "The whole tree" },
    { value: "card", label: active ? `“${cardTitle(active.content, 40)}” and the cards under it` : "The active card", disabled: !active },
    { value: "column", label: active ? `Column ${active.depth}` : "The active card's column", disabled: !active },
  ];
  const scopeChoices = scopes.map(({ value, label, disabled }, index) =>
    h(
      "label",
      { class: "choice" },
      h("input", { type: "radio", name: "export-scope", value, checked: index === 0, disabled: disabled ?? false }),
      label,
    ),
  );
  const link = h("a", { class: "button button-primary", download: "", href: "#" }, "Download");
  const update = () => {
    const format = (modal.body.querySelector<HTMLInputElement>("input[name=export-format]:checked")?.value ?? "md") as ExportFormat;
    const scope = modal.body.querySelector<HTMLInputElement>("input[name=export-scope]:checked")?.value ?? "tree";
    link.href = exportUrl(treeId, format, {
      cardId: scope === "card" ? active?.id : undefined,
      column: scope === "column" ? active?.depth : undefined,
    });
  };
  modal.body.append(
    h("fieldset", { class: "choices choices-grid" }, h("legend", {}, "Format"), formatChoices),
    h("fieldset", { class: "choices" }, h("legend", {}, "What to export"), scopeChoices),
  );
  modal.body.addEventListener("change", update);
  update();
  // The download starts from the link itself; closing the dialog right after is fine.
  link.addEventListener("click", () => {
    bus.trigger("export:download", link.getAttribute("href"));
    window.setTimeout(() => modal.close(), 0);
  });
  modal.footer.append(h("button", { type: "button", class: "button", onclick: () => modal.close() }, "Cancel"), link);
  modal.body.querySelector<HTMLInputElement>("input[name=export-format]:checked")?.focus();
}
