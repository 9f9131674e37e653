/**
 * The log-in / sign-up page at `/` for a visitor without a session. Submitting triggers
 * `ui:login` or `ui:signup` on the bus; this page also answers them, so a script can log in
 * the same way. A 401 reads "wrong email or password", not the server's jargon.
 */
import { ApiError, describeError, type UserView } from "../api.js";
import type { AppContext } from "../context.js";
import { errorLine, field } from "../dialogs/modal.js";
import { h, mount } from "../dom.js";
import type { Credentials } from "../events.js";
import { brandMark } from "./header.js";

/** Logs in or signs up and sets the session; returns a sentence to show on failure. */
export async function authenticate(app: AppContext, mode: "login" | "signup", credentials: Credentials): Promise<UserView | string> {
  try {
    const user =
      mode === "login"
        ? await app.api.logIn(credentials.email, credentials.password)
        : await app.api.signUp(credentials.email, credentials.password);
    app.session.set(user);
    app.bus.trigger("user:login", user);
    return user;
  } catch (error) {
    return failureMessage(mode, error);
  }
}

function failureMessage(mode: "login" | "signup", error: unknown): string {
  if (error instanceof ApiError) {
    if (mode === "login" && error.status === 401) return "That email and password don't match an account. Check them and try again.";
    if (mode === "signup" && error.status === 409) return "An account with this email already exists. Log in instead.";
    if (error.status === 403 && mode === "signup") return "Sign-up is turned off on this server. Ask its administrator for an account.";
  }
  return describeError(error);
}

export function renderLogin(app: AppContext, root: HTMLElement, context: object): void {
  const { bus } = app;
  let mode: "login" | "signup" = "login";
  const email = h("input", { type: "email", class: "input", name: "email", autocomplete: "username", required: true });
  const password = h("input", {
    type: "password",
    class: "input",
    name: "password",
    autocomplete: "current-password",
    required: true,
    minlength: 8,
  });
  const error = errorLine();
  const submit = h("button", { type: "submit", class: "button button-primary button-wide" }, "Log in");
  const heading = h("h1", {}, "Log in to Cardtree");
  const switchLabel = h("span", {}, "New here?");
  const switchButton = h("button", { type: "button", class: "link-button" }, "Create an account");

  const setMode = (next: "login" | "signup") => {
    mode = next;
    heading.textContent = next === "login" ? "Log in to Cardtree" : "Create your Cardtree account";
    submit.textContent = next === "login" ? "Log in" : "Create account";
    switchLabel.textContent = next === "login" ? "New here?" : "Have an account?";
    switchButton.textContent = next === "login" ? "Create an account" : "Log in instead";
    password.autocomplete = next === "login" ? "current-password" : "new-password";
    error.clear();
  };
  switchButton.addEventListener("click", () => setMode(mode === "login" ? "signup" : "login"));

  const form = h(
    "form",
    { class: "form login-form", novalidate: true },
    heading,
    h("p", { class: "login-lede" }, "Write in trees of cards: an outline that grows to the right."),
    field("Email", email),
    field("Password", password, "At least 8 characters."),
    error,
    submit,
    h("p", { class: "login-switch" }, switchLabel, " ", switchButton),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!email.value.trim() || password.value.length === 0) {
      error.show("Enter your email and password.");
      return;
    }
    bus.trigger(mode === "login" ? "ui:login" : "ui:signup", { email: email.value.trim(), password: password.value });
  });

  const run = async (which: "login" | "signup", credentials: Credentials) => {
    submit.disabled = true;
    error.clear();
    const result = await authenticate(app, which, credentials);
    submit.disabled = false;
    if (typeof result === "string") {
      error.show(result);
      password.select();
    } else {
      bus.trigger("ui:navigate", location.pathname);
    }
  };
  bus.on("ui:login", (credentials) => void run("login", credentials), context);
  bus.on("ui:signup", (credentials) => void run("signup", credentials), context);

  mount(
    root,
    h(
      "main",
      { class: "login-page" },
      h("div", { class: "brand brand-large", "aria-hidden": "true" }, brandMark(), h("span", {}, "Cardtree")),
      form,
    ),
  );
  email.focus();
}
