/**
 * The "new tree" dialog (`modal:show:new-tree`): a name, and optionally a built-in template
 * (templates.ts) or Markdown or JSON to start from. Submitting triggers `trees:create`; the dialog stays open with the error when
 * the server refuses, so the pasted text is not lost.
 */
import type { AppBus } from "../bus.js";
import { h } from "../dom.js";
import { errorLine, field, openModal } from "./modal.js";
import { seedInput } from "./seed-input.js";
import { TEMPLATES } from "./templates.js";

export function showNewTreeDialog(bus: AppBus): void {
  const modal = openModal({ title: "New tree", className: "dialog-medium" });
  const name = h("input", { type: "text", class: "input", value: "Untitled tree", maxlength: 200, autocomplete: "off" });
  const seed = seedInput("Start from (optional)");
  const template = h(
    "select",
    { class: "input", id: `new-tree-template-${Date.now()}` },
    h("option", { value: "" }, "None: an empty tree"),
    TEMPLATES.map((t) => h("option", { value: t.id }, t.label)),
  );
  // A template fills the text (seen and editable before creating) and, if not yet changed, the name.
  let suggested = name.value;
  template.addEventListener("change", () => {
    const chosen = TEMPLATES.find((t) => t.id === template.value);
    seed.textarea.value = chosen?.seed ?? "";
    if (name.value === suggested) name.value = suggested = chosen?.name ?? "Untitled tree";
  });
  const error = errorLine();
  const create = h("button", { type: "submit", class: "button button-primary" }, "Create tree");
  const form = h("form", { class: "form", id: `new-tree-${Date.now()}` }, field("Name", name), field("Template", template), seed.element, error);
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
