/**
 * Who can open a tree. The owner adds people by the email of their Cardtree account and
 * removes them; a collaborator sees the list and can leave. The list is read fresh each time
 * the dialog opens.
 */
import { describeError, type Collaborator } from "../api.js";
import type { AppContext } from "../context.js";
import { h } from "../dom.js";
import { confirmDialog } from "./confirm.js";
import { errorLine, field, openModal } from "./modal.js";

export function showCollaboratorsDialog(app: AppContext, treeId: string): void {
  const { bus, api } = app;
  const name = app.trees.get(treeId)?.name;
  const context = {};
  const modal = openModal({
    title: name ? `People with access to “${name}”` : "People with access",
    className: "dialog-medium",
    onClose: () => bus.offAll(context),
  });
  const list = h("ul", { class: "people-list", "aria-label": "Collaborators" });
  const error = errorLine();
  const addArea = h("div", {});
  modal.body.append(list, error, addArea);
  modal.footer.append(h("button", { type: "button", class: "button", onclick: () => modal.close() }, "Done"));

  const me = app.session.user;
  const done = (problem: string | null) => (problem ? error.show(problem) : error.clear());

  const draw = (people: Collaborator[]) => {
    const iOwn = people.some((p) => p.owner && p._id === me?._id);
    list.replaceChildren(
      ...people.map((person) =>
        h(
          "li",
          { class: "person" },
          h("span", { class: "person-email" }, person.email),
          person._id === me?._id ? h("span", { class: "badge" }, "you") : null,
          person.owner ? h("span", { class: "badge badge-owner" }, "owner") : null,
          iOwn && !person.owner
            ? h(
                "button",
                {
                  type: "button",
                  class: "button button-small button-danger-quiet",
                  "aria-label": `Remove ${person.email}`,
                  onclick: () => bus.trigger("collaborators:remove", { treeId, userId: person._id, done }),
                },
                "Remove",
              )
            : null,
          !iOwn && person._id === me?._id
            ? h(
                "button",
                {
                  type: "button",
                  class: "button button-small button-danger-quiet",
                  onclick: async () => {
                    const sure = await confirmDialog({
                      title: "Leave tree",
                      message: "Leave this tree? You will no longer see it; the owner can add you again.",
                      confirmLabel: "Leave",
                      danger: true,
                    });
                    if (sure) {
                      bus.trigger("collaborators:remove", { treeId, userId: person._id, done });
                      modal.close();
                    }
                  },
                },
                "Leave",
              )
            : null,
        ),
      ),
    );
    addArea.replaceChildren(iOwn ? addForm() : h("p", { class: "field-hint" }, "Only the owner can add or remove people."));
  };

  const addForm = () => {
    const email = h("input", { type: "email", class: "input", placeholder: "name@example.com", autocomplete: "off" });
    const form = h(
      "form",
      { class: "form form-inline" },
      field("Add someone by the email of their Cardtree account", email),
      h("button", { type: "submit", class: "button button-primary" }, "Add"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const value = email.value.trim();
      if (value === "") return;
      bus.trigger("collaborators:add", {
        treeId,
        email: value,
        done: (problem: string | null) => {
          done(problem);
          if (!problem) email.value = "";
        },
      });
    });
    queueMicrotask(() => email.focus());
    return form;
  };

  const load = async () => {
    try {
      draw(await api.collaborators(treeId));
    } catch (problem) {
      error.show(describeError(problem));
    }
  };
  bus.on("collaborators:changed", (changedId) => changedId === treeId && void load(), context);
  void load();
}
