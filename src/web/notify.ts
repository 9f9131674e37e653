/**
 * Short messages at the bottom of the window (an aria-live region), for things a writer must
 * notice: a failed request, a recovered draft, a refused change. Errors stay until closed;
 * other messages fade after a few seconds.
 */
import { h } from "./dom.js";

export interface NotifyOptions {
  kind?: "info" | "success" | "error";
  /** Milliseconds; 0 keeps the message until the writer closes it. */
  timeout?: number;
  action?: { label: string; run: () => void };
}

export function notify(message: string, options: NotifyOptions = {}): () => void {
  const region = document.getElementById("toasts");
  if (!region) return () => undefined;
  const kind = options.kind ?? "info";
  const timeout = options.timeout ?? (kind === "error" ? 0 : 4000);
  const close = () => toast.remove();
  const toast = h(
    "div",
    { class: `toast toast-${kind}`, role: kind === "error" ? "alert" : null },
    h("span", { class: "toast-text" }, message),
    options.action &&
      h("button", { type: "button", class: "button button-small", onclick: () => options.action?.run() }, options.action.label),
    h("button", { type: "button", class: "icon-button toast-close", "aria-label": "Dismiss", onclick: close }, "×"),
  );
  // The same message twice (a reader pressing Enter again on a read-only tree) shows once.
  for (const old of region.querySelectorAll(".toast")) if (old.querySelector(".toast-text")?.textContent === message) old.remove();
  region.append(toast);
  if (timeout > 0) window.setTimeout(close, timeout);
  return close;
}

/** Offers text that could not be saved, so it is never simply gone. */
export function notifyWithText(message: string, text: string): void {
  notify(message, { kind: "error", action: { label: "Copy text", run: () => copyText(text) } });
}

/** Puts `text` on the clipboard and says so; where the browser refuses, shows it to copy by hand. */
export function copyText(text: string): void {
  void navigator.clipboard.writeText(text).then(
    () => notify("Copied to the clipboard.", { kind: "success" }),
    () => window.prompt("Copy your text:", text),
  );
}
