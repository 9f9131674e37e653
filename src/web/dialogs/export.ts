/**
 * Export menu (`modal:show:export`): a format and a scope (whole tree, the active card with
 * what is under it, or the active card's column; only the leaves, if asked). The Download link
 * points at `GET /api/export/...`; a click fetches it with a progress panel (a presentation of
 * thousands of cards takes seconds to make), then saves it under the server's file name. The
 * Print view link opens the same scope as one page to print (`/trees/:id/print`).
 */
import { exportUrl, printUrl, type ExportFormat, type ExportScope } from "../api.js";
import type { AppBus } from "../bus.js";
import { h, saveBlob } from "../dom.js";
import { cardTitle } from "../markdown.js";
import { notify } from "../notify.js";
import { formatBytes, showProgress } from "../views/progress.js";
import { openModal } from "./modal.js";
import "../shared-chunk.js";

const FORMATS: { format: ExportFormat; label: string; hint: string }[] = [
  { format: "docx", label: "Word document", hint: ".docx with headings, lists and emphasis" },
  { format: "md", label: "Markdown", hint: "cards in order, separated by blank lines" },
  { format: "txt", label: "Plain text", hint: "the same, as .txt" },
  { format: "html", label: "Web page", hint: "one HTML page, ready to print" },
  { format: "impress", label: "Presentation", hint: ".pptx, one slide per card" },
  { format: "json", label: "JSON", hint: "the tree's structure, for import or backup" },
  { format: "opml", label: "OPML outline", hint: "for Workflowy, Dynalist, OmniOutliner, Logseq" },
  { format: "gkw", label: "Gingko Writer", hint: ".gkw, the tree as Gingko Writer keeps it" },
];

export function showExportDialog(
  bus: AppBus,
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
  const leaves = h("input", { type: "checkbox", name: "export-leaves", id: "export-leaves" });
  const link = h("a", { class: "button button-primary", download: "", href: "#" }, "Download");
  const print = h("a", { class: "button", href: "#", target: "_blank", rel: "noopener", id: "export-print" }, "Print view");
  const update = () => {
    const format = (modal.body.querySelector<HTMLInputElement>("input[name=export-format]:checked")?.value ?? "md") as ExportFormat;
    const scope = modal.body.querySelector<HTMLInputElement>("input[name=export-scope]:checked")?.value ?? "tree";
    const chosen: ExportScope = {
      cardId: scope === "card" ? active?.id : undefined,
      column: scope === "column" ? active?.depth : undefined,
      leaves: leaves.checked,
    };
    link.href = exportUrl(treeId, format, chosen);
    print.href = printUrl(treeId, chosen);
  };
  modal.body.append(
    h("fieldset", { class: "choices choices-grid" }, h("legend", {}, "Format"), formatChoices),
    h(
      "fieldset",
      { class: "choices" },
      h("legend", {}, "What to export"),
      scopeChoices,
      h("label", { class: "choice", for: "export-leaves" }, leaves, "Only the leaves: the cards with nothing under them"),
    ),
  );
  modal.body.addEventListener("change", update);
  update();
  // The download starts from the link itself; closing the dialog right after is fine.
  link.addEventListener("click", (event) => {
    event.preventDefault();
    const href = link.getAttribute("href") ?? "";
    const label = FORMATS.find((f) => href.includes(`.${f.format}`))?.label ?? "Export";
    bus.trigger("export:download", href);
    modal.close();
    void downloadWithProgress(href, label);
  });
  print.addEventListener("click", () => modal.close());
  modal.footer.append(h("button", { type: "button", class: "button", onclick: () => modal.close() }, "Cancel"), print, link);
  modal.body.querySelector<HTMLInputElement>("input[name=export-format]:checked")?.focus();
}

/** Fetches an export while showing its progress, then hands it to the browser as a download. */
async function downloadWithProgress(href: string, label: string): Promise<void> {
  const progress = showProgress(`Exporting: ${label}`, "The server is making the file");
  try {
    const response = await fetch(href, { credentials: "same-origin" });
    if (!response.ok || !response.body) {
      const body = await response.json().catch(() => null);
      throw new Error(body?.message ?? `The server answered ${response.status}.`);
    }
    const total = Number(response.headers.get("content-length")) || 0;
    const reader = response.body.getReader();
    const chunks: Uint8Array<ArrayBuffer>[] = [];
    let received = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      received += value.length;
      progress.step(`Downloading ${formatBytes(received)}${total ? ` of ${formatBytes(total)}` : ""}`);
      progress.fraction(total ? received / total : null);
    }
    saveBlob(new Blob(chunks, { type: response.headers.get("content-type") ?? "application/octet-stream" }), fileName(response.headers.get("content-disposition")));
  } catch (error) {
    notify(`Couldn't export: ${error instanceof Error ? error.message : String(error)}`, { kind: "error" });
  } finally {
    progress.close();
  }
}

/** The file name from Content-Disposition (RFC 6266: `filename*` first, for non-ASCII names). */
function fileName(disposition: string | null): string {
  const extended = /filename\*=UTF-8''([^;]+)/i.exec(disposition ?? "");
  if (extended) {
    try {
      return decodeURIComponent(extended[1]);
    } catch {
      // Fall through to the plain name.
    }
  }
  return /filename="?([^";]+)"?/i.exec(disposition ?? "")?.[1] ?? "export";
}
