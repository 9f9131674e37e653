/**
 * Import into the open tree (`modal:show:import`): paste Markdown, JSON, OPML or a Gingko
 * Writer file, or load one,
 * and put the new cards under the active card or at the end of the first column. The dialog
 * triggers `cards:import`; the tree page does the request and stays open on failure.
 */
import type { AppBus } from "../bus.js";
import { h } from "../dom.js";
import { cardTitle } from "../markdown.js";
import { errorLine, openModal } from "./modal.js";
import { seedInput } from "./seed-input.js";
import "../shared-chunk.js";

export function showImportDialog(bus: AppBus, active: { id: string; content: string } | null): void {
  const modal = openModal({ title: "Import cards", className: "dialog-medium" });
  const seed = seedInput("Markdown, JSON, OPML or a Gingko Writer file");
  const error = errorLine();
  const under = h("input", { type: "radio", name: "import-where", value: "under", id: "import-under", checked: active !== null, disabled: active === null });
  const top = h("input", { type: "radio", name: "import-where", value: "top", id: "import-top", checked: active === null });
  const submit = h("button", { type: "submit", class: "button button-primary" }, "Import");
  const form = h(
    "form",
    { class: "form", id: "import-form" },
    seed.element,
    h(
      "fieldset",
      { class: "choices" },
      h("legend", {}, "Put the new cards"),
      h("label", { class: "choice", for: "import-under" }, under, active ? `Under “${cardTitle(active.content, 40)}”` : "Under the active card"),
      h("label", { class: "choice", for: "import-top" }, top, "In the first column, after the last card"),
    ),
    error,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit.disabled = true;
    bus.trigger("cards:import", {
      parentId: under.checked && active ? active.id : null,
      seed: seed.value(),
      done: (problem: string | null) => {
        submit.disabled = false;
        if (problem) error.show(problem);
        else modal.close();
      },
    });
  });
  submit.setAttribute("form", form.id);
  modal.body.append(form);
  modal.footer.append(h("button", { type: "button", class: "button", onclick: () => modal.close() }, "Cancel"), submit);
  seed.textarea.focus();
}
