/**
 * `/settings`: the account's password (current and new: `PUT /api/index`, which signs out
 * every other session of the user), and the user's own scripts (docs/scripting.md, "Your scripts on the server").
 * Paste a script or pick a `.js` file, turn scripts on and off, change or remove them. They
 * are kept on the server for this user alone and run on their tree pages (user-scripts.ts).
 * This page runs none of them, so a script that breaks pages can always be turned off here.
 */
import { ApiError, describeError, type ApiClient, type ScriptView } from "../api.js";
import type { AppContext } from "../context.js";
import { confirmDialog } from "../dialogs/confirm.js";
import { errorLine, field } from "../dialogs/modal.js";
import { h, mount } from "../dom.js";
import { notify } from "../notify.js";
import { topBar } from "./header.js";
import "../shared-chunk.js";

export function renderSettings(app: AppContext, root: HTMLElement, scriptsRunning: boolean): void {
  const { api } = app;
  const bar = topBar(app);
  const list = h("ul", { class: "script-list", "aria-label": "Your scripts" });
  const message = h("p", { class: "page-message", role: "status" }, "Loading your scripts…");
  const editor = scriptForm(api, () => void load());
  mount(
    root,
    bar.element,
    h(
      "main",
      { class: "trees-page settings-page" },
      h("div", { class: "trees-heading" }, h("h1", {}, "Settings")),
      passwordForm(app),
      h("h2", { class: "settings-heading" }, "Your scripts"),
      h(
        "p",
        { class: "field-hint" },
        "Scripts you add here run on your tree pages, the way scripts for Gingko did (see the scripting guide: ",
        h("code", {}, "window.app"),
        ", ",
        h("code", {}, "Backbone"),
        ", ",
        h("code", {}, "Mousetrap"),
        "). Only you run them, never the people you share a tree with. Changes apply the next time a tree page opens. This page runs none of them.",
      ),
      scriptsRunning
        ? h("p", { class: "field-hint" }, "Your scripts are running in this tab; reload this page to see it without them.")
        : null,
      message,
      list,
      editor.element,
    ),
  );
  document.title = "Settings · Cardtree";

  const draw = (scripts: ScriptView[]) => {
    list.replaceChildren(...scripts.map((script) => scriptItem(api, script, { edit: () => void editor.edit(script), changed: () => void load() })));
    message.hidden = scripts.length > 0;
    message.textContent = "No scripts yet. Add one below.";
  };

  const load = async () => {
    try {
      draw(await api.scripts());
    } catch (error) {
      message.hidden = false;
      message.textContent = describeError(error);
      message.classList.add("page-message-error");
    }
  };
  void load();
}

/** Current password, new one twice; the server's refusal (wrong password, too short, too many tries) shown under it. */
function passwordForm(app: AppContext): HTMLElement {
  const input = (id: string, autocomplete: string) => h("input", { type: "password", class: "input", id, autocomplete, required: true });
  const current = input("password-current", "current-password");
  const next = input("password-new", "new-password");
  const again = input("password-again", "new-password");
  const problem = errorLine();
  const save = h("button", { type: "submit", class: "button button-primary" }, "Change password");
  const form = h(
    "form",
    { class: "form password-form", "aria-labelledby": "password-heading" },
    h("h2", { class: "settings-heading", id: "password-heading" }, "Password"),
    field("Current password", current),
    field("New password", next, "8 characters or more. Your other sessions are signed out; this one stays."),
    field("New password again", again),
    problem,
    h("div", { class: "form-actions" }, save),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.clear();
    if (next.value !== again.value) return problem.show("The two new passwords differ.");
    if (next.value.length < 8) return problem.show("The new password needs 8 characters or more.");
    save.disabled = true;
    try {
      const user = await app.api.changePassword(current.value, next.value);
      const csrf = app.session.user?.csrf ?? "";
      app.session.set({ ...user, csrf: user.csrf || csrf });
      form.reset();
      notify("Password changed. Your other sessions are signed out.", { kind: "success" });
    } catch (error) {
      problem.show(error instanceof ApiError && error.status === 403 ? "The current password is wrong." : describeError(error));
    } finally {
      save.disabled = false;
    }
  });
  return form;
}

function scriptItem(api: ApiClient, script: ScriptView, on: { edit: () => void; changed: () => void }): HTMLElement {
  const toggle = h("input", { type: "checkbox", "aria-label": `Run “${script.name}” on my tree pages` });
  toggle.checked = script.enabled;
  toggle.addEventListener("change", async () => {
    toggle.disabled = true;
    try {
      await api.updateScript(script._id, { enabled: toggle.checked });
      on.changed();
    } catch (error) {
      toggle.checked = !toggle.checked;
      notify(describeError(error), { kind: "error" });
    } finally {
      toggle.disabled = false;
    }
  });
  const remove = async () => {
    const sure = await confirmDialog({
      title: "Remove this script?",
      message: `“${script.name}” will no longer run on your tree pages, and its text is gone from the server.`,
      confirmLabel: "Remove script",
      danger: true,
    });
    if (!sure) return;
    try {
      await api.deleteScript(script._id);
      on.changed();
    } catch (error) {
      notify(describeError(error), { kind: "error" });
    }
  };
  return h(
    "li",
    { class: "tree-item script-item", "data-script-id": script._id },
    h("label", { class: "script-toggle" }, toggle, h("span", { class: "script-name" }, script.name)),
    h("span", { class: "tree-meta" }, `${formatSize(script.size)}${script.enabled ? "" : " · off"}`),
    h("button", { type: "button", class: "button button-quiet button-small", onclick: on.edit }, "Edit"),
    h("button", { type: "button", class: "button button-quiet button-small button-danger-quiet", onclick: () => void remove() }, "Remove"),
  );
}

/** The form below the list: a new script, or the one being changed. */
function scriptForm(api: ApiClient, saved: () => void) {
  let editing: ScriptView | null = null;
  const heading = h("h2", {}, "Add a script");
  const name = h("input", { class: "input", id: "script-name", required: true, maxlength: 100, autocomplete: "off" });
  const body = h("textarea", { class: "input script-body", id: "script-body", rows: 14, spellcheck: "false" });
  const file = h("input", { type: "file", id: "script-file", accept: ".js,text/javascript,application/javascript" });
  const error = h("p", { class: "form-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "button button-primary" }, "Add script");
  const cancel = h("button", { type: "button", class: "button", hidden: true, onclick: () => reset() }, "Cancel");

  const reset = () => {
    editing = null;
    heading.textContent = "Add a script";
    submit.textContent = "Add script";
    cancel.hidden = true;
    name.value = "";
    body.value = "";
    file.value = "";
    error.hidden = true;
  };

  file.addEventListener("change", async () => {
    const picked = file.files?.[0];
    if (!picked) return;
    body.value = await picked.text();
    if (name.value.trim() === "") name.value = picked.name.replace(/\.js$/i, "");
  });

  const form = h(
    "form",
    { class: "form script-form" },
    heading,
    h("div", { class: "field" }, h("label", { for: "script-name" }, "Name"), name),
    h(
      "div",
      { class: "field" },
      h("label", { for: "script-body" }, "JavaScript"),
      body,
      h("p", { class: "field-hint" }, h("label", { for: "script-file" }, "Paste it here, or pick a .js file: "), file),
    ),
    error,
    h("div", { class: "script-form-actions" }, cancel, submit),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    submit.disabled = true;
    try {
      const fields = { name: name.value, body: body.value };
      if (editing) await api.updateScript(editing._id, fields);
      else await api.createScript(fields);
      notify(editing ? "Script saved. It runs from the next tree page you open." : "Script added. It runs from the next tree page you open.", { kind: "success" });
      reset();
      saved();
    } catch (problem) {
      error.textContent = describeError(problem);
      error.hidden = false;
    } finally {
      submit.disabled = false;
    }
  });

  return {
    element: form,
    /** Loads a script's text into the form to change it. */
    async edit(script: ScriptView) {
      try {
        body.value = await api.scriptText(script._id);
      } catch (problem) {
        notify(describeError(problem), { kind: "error" });
        return;
      }
      editing = script;
      heading.textContent = `Change “${script.name}”`;
      submit.textContent = "Save script";
      cancel.hidden = false;
      name.value = script.name;
      error.hidden = true;
      name.focus();
    },
  };
}

function formatSize(bytes: number): string {
  return bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KiB`;
}
