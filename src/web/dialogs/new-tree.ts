/**
 * The "new tree" dialog (`modal:show:new-tree`): a name, and optionally Markdown or JSON to
 * start from. Submitting triggers `trees:create`; the dialog stays open with the error when
 * the server refuses, so the pasted text is not lost.
 */
import type { AppBus } from "../bus.js";
import { h } from "../dom.js";
import { errorLine, field, openModal } from "./modal.js";
import { seedInput } from "./seed-input.js";

export function showNewTreeDialog(bus: AppBus): void {
  const modal = openModal({ title: "New tree", className: "dialog-medium" });
  const name = h("input", { type: "text", class: "input", value: "Untitled tree", maxlength: 200, autocomplete: "off" });
  const seed = seedInput("Start from (optional)");
  const error = errorLine();
  const create = h("button", { type: "submit", class: "button button-primary" }, "Create tree");
  const form = h("form", { class: "form", id: `new-tree-${Date.now()}` }, field("Name", name), seed.element, error);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const treeName = name.value.trim();
    if (treeName === "") {
      error.show("Give the tree a name.");
      name.focus();
      return;
    }
    create.disabled = true;
    bus.trigger("trees:create", {
      name: treeName,
      seed: seed.value(),
      done: (problem: string | null) => {
        create.disabled = false;
        if (problem) error.show(problem);
        else modal.close();
      },
    });
  });
  create.setAttribute("form", form.id);
  modal.body.append(form);
  modal.footer.append(h("button", { type: "button", class: "button", onclick: () => modal.close() }, "Cancel"), create);
  name.focus();
  name.select();
}
