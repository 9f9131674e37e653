/**
 * Yes/no and one-line questions as dialogs (never window.confirm, which blocks the page and
 * looks like a browser warning). The confirming button has focus, so Enter answers yes; for a
 * destructive question (`danger`) the cancelling one has it, so a stray Enter destroys nothing.
 */
import { h } from "../dom.js";
import { errorLine, field, openModal } from "./modal.js";

export function confirmDialog(options: {
  title: string;
  message: string;
  confirmLabel: string;
  cancelLabel?: string;
  danger?: boolean;
}): Promise<boolean> {
  return new Promise((resolve) => {
    let answer = false;
    const modal = openModal({ title: options.title, className: "dialog-small", onClose: () => resolve(answer) });
    modal.body.append(h("p", {}, options.message));
    const yes = h(
      "button",
      {
        type: "button",
        class: `button ${options.danger ? "button-danger" : "button-primary"}`,
        onclick: () => {
          answer = true;
          modal.close();
        },
      },
      options.confirmLabel,
    );
    const no = h("button", { type: "button", class: "button", onclick: () => modal.close() }, options.cancelLabel ?? "Cancel");
    modal.footer.append(no, yes);
    (options.danger ? no : yes).focus();
  });
}

/**
 * Asks for one line of text. `submit` runs the action and returns an error message to show
 * (the dialog stays open) or null when done.
 */
export function promptDialog(options: {
  title: string;
  label: string;
  value?: string;
  confirmLabel: string;
  hint?: string;
  submit: (value: string) => Promise<string | null>;
}): void {
  const modal = openModal({ title: options.title, className: "dialog-small" });
  const input = h("input", { type: "text", class: "input", value: options.value ?? "", autocomplete: "off" });
  const error = errorLine();
  const form = h("form", { class: "form" }, field(options.label, input, options.hint), error);
  const ok = h("button", { type: "submit", class: "button button-primary" }, options.confirmLabel);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    ok.disabled = true;
    const problem = await options.submit(input.value.trim());
    ok.disabled = false;
    if (problem) error.show(problem);
    else modal.close();
  });
  modal.footer.append(h("button", { type: "button", class: "button", onclick: () => modal.close() }, "Cancel"), ok);
  ok.setAttribute("form", (form.id = `form-${Math.random().toString(36).slice(2)}`));
  modal.body.append(form);
  input.focus();
  input.select();
}
