/**
 * Shown when the session ends while changes are waiting (the server answered 401): log in
 * again right here, and the waiting changes go out. Leaving the page instead would lose them.
 */
import { h } from "../dom.js";
import type { AppContext } from "../context.js";
import { authenticate } from "../views/login.js";
import { errorLine, field, openModal } from "./modal.js";

let open = false;

export function showLoginAgainDialog(app: AppContext, resume: () => void): void {
  if (open) return;
  open = true;
  const modal = openModal({ title: "Log in again to save", className: "dialog-small", onClose: () => (open = false) });
  const email = h("input", { type: "email", class: "input", autocomplete: "username", value: app.session.user?.email ?? "" });
  const password = h("input", { type: "password", class: "input", autocomplete: "current-password" });
  const error = errorLine();
  const submit = h("button", { type: "submit", class: "button button-primary" }, "Log in and save");
  const form = h(
    "form",
    { class: "form", id: "login-again-form" },
    h("p", {}, "Your session has ended. Your changes are kept on this page; log in to send them."),
    field("Email", email),
    field("Password", password),
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    const result = await authenticate(app, "login", { email: email.value.trim(), password: password.value });
    submit.disabled = false;
    if (typeof result === "string") {
      error.show(result);
      return;
    }
    modal.close();
    resume();
  });
  submit.setAttribute("form", form.id);
  modal.body.append(form);
  modal.footer.append(submit);
  (email.value ? password : email).focus();
}
