/**
 * Tree settings (`modal:show:rename-tree`, the tree's title, the list's "Settings"): the
 * tree's name and its math switch (`latex`: `$…$` and `$$…$$` drawn as formulas), both of
 * which the owner and every collaborator may change (SPEC §3). Only what changed is sent, in
 * one `PUT /api/trees/:id`; a refusal is shown and the dialog stays open.
 */
import type { Tree } from "../api.js";
import type { AppBus } from "../bus.js";
import { h } from "../dom.js";
import { errorLine, field, openModal } from "./modal.js";

export function showTreeSettingsDialog(bus: AppBus, tree: Tree): void {
  const modal = openModal({ title: "Tree settings", className: "dialog-small tree-settings" });
  const name = h("input", { type: "text", class: "input", value: tree.name, autocomplete: "off", maxlength: "200" });
  const latex = h("input", { type: "checkbox", id: `tree-latex-${tree._id}`, checked: tree.latex === true });
  const error = errorLine();
  const form = h(
    "form",
    { class: "form", id: `tree-settings-${tree._id}` },
    field("Name", name),
    h(
      "div",
      { class: "field field-check" },
      h("label", { class: "choice", for: latex.id }, latex, "Show math"),
      h("p", { class: "field-hint", id: `${latex.id}-hint` }, "Draws LaTeX between $…$ (in a line) and $$…$$ (a block) as formulas, for everyone who reads this tree."),
    ),
    error,
  );
  latex.setAttribute("aria-describedby", `${latex.id}-hint`);
  const save = h("button", { type: "submit", class: "button button-primary", form: form.id }, "Save");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const changes: { name?: string; latex?: boolean } = {};
    const nextName = name.value.trim();
    if (nextName === "") return error.show("Give the tree a name.");
    if (nextName !== tree.name) changes.name = nextName;
    if (latex.checked !== (tree.latex === true)) changes.latex = latex.checked;
    if (Object.keys(changes).length === 0) return modal.close();
    save.disabled = true;
    bus.trigger("trees:update", {
      treeId: tree._id,
      changes,
      done: (problem) => {
        save.disabled = false;
        if (problem) error.show(problem);
        else modal.close();
      },
    });
  });
  modal.footer.append(h("button", { type: "button", class: "button", onclick: () => modal.close() }, "Cancel"), save);
  modal.body.append(form);
  name.focus();
  name.select();
}
