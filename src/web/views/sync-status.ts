/**
 * The save status in the top bar: "All changes saved", "Saving…", or, when the server can't
 * be reached, how many changes wait on this device and since when, when the next try is, and
 * a button to try now (SPEC §13: the status line tells the truth). The text shrinks with an
 * ellipsis rather than run over the title; on a phone it is a strip under the bar (touch.css,
 * topbar.css).
 */
import { h } from "../dom.js";
import type { SyncStatus } from "../model/sync.js";

let countdown: number | undefined;

/** "since 14:05", or "since 24 Nov, 14:05" for a change made on another day. */
export function sinceText(since: number | null, now = Date.now()): string {
  if (since === null) return "";
  const then = new Date(since);
  const time = then.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const sameDay = new Date(now).toDateString() === then.toDateString();
  return sameDay ? `since ${time}` : `since ${then.toLocaleDateString([], { day: "numeric", month: "short" })}, ${time}`;
}

/**
 * "3 changes waiting on this device since 14:05" once all are in the device's outbox; before,
 * "3 changes waiting, keeping them on this device…": a browser closed then would lose some.
 */
export function waitingText(pending: number, since: number | null, unstored: number): string {
  const count = `${pending} change${pending === 1 ? "" : "s"} waiting`;
  if (unstored > 0) return `${count}, keeping ${pending === 1 ? "it" : "them"} on this device…`;
  return since === null ? `${count} on this device` : `${count} on this device ${sinceText(since)}`;
}

export function renderSyncStatus(element: HTMLElement, status: SyncStatus, retryNow: () => void): void {
  window.clearInterval(countdown);
  countdown = undefined;
  element.dataset.state = status.kind;
  element.dataset.pending = String(status.kind === "saved" ? 0 : status.pending);
  // Changes not yet written to the device's outbox (SyncStatus): tests and scripts wait for 0.
  element.dataset.unstored = String(status.kind === "saved" ? 0 : status.unstored);
  const text = (value: string) => {
    element.title = value;
    return h("span", { class: "status-text" }, value);
  };
  switch (status.kind) {
    case "saved":
      element.replaceChildren(h("span", { class: "status-dot" }), text("All changes saved"));
      return;
    case "saving":
      element.replaceChildren(h("span", { class: "status-dot" }), text(status.pending > 1 ? `Saving ${status.pending} changes…` : "Saving…"));
      return;
    case "signed-out":
      element.replaceChildren(h("span", { class: "status-dot" }), text(`Logged out: ${waitingText(status.pending, status.since, status.unstored)}`));
      return;
    case "retrying": {
      const label = text("");
      const tick = () => {
        const seconds = Math.max(0, Math.ceil((status.retryAt - Date.now()) / 1000));
        const value = `Not saved yet: ${waitingText(status.pending, status.since, status.unstored)}; retrying in ${seconds} s`;
        label.textContent = value;
        element.title = `${value}. ${status.reason}`;
      };
      tick();
      countdown = window.setInterval(tick, 1000);
      element.replaceChildren(
        h("span", { class: "status-dot" }),
        label,
        h("button", { type: "button", class: "link-button", title: status.reason, onclick: retryNow }, "Retry now"),
      );
    }
  }
}
