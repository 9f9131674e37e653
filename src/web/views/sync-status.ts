/**
 * The save status in the top bar: "Saved", "Saving…", or, when the server can't be reached,
 * how many changes are waiting and when the next try is, with a button to try now.
 */
import { h } from "../dom.js";
import type { SyncStatus } from "../model/sync.js";

let countdown: number | undefined;

export function renderSyncStatus(element: HTMLElement, status: SyncStatus, retryNow: () => void): void {
  window.clearInterval(countdown);
  countdown = undefined;
  element.dataset.state = status.kind;
  const waiting = (n: number) => `${n} change${n === 1 ? "" : "s"} waiting`;
  switch (status.kind) {
    case "saved":
      element.replaceChildren(h("span", { class: "status-dot" }), "All changes saved");
      return;
    case "saving":
      element.replaceChildren(h("span", { class: "status-dot" }), "Saving…");
      return;
    case "signed-out":
      element.replaceChildren(h("span", { class: "status-dot" }), `Logged out: ${waiting(status.pending)}`);
      return;
    case "retrying": {
      const text = h("span", {});
      const tick = () => {
        const seconds = Math.max(0, Math.ceil((status.retryAt - Date.now()) / 1000));
        text.textContent = `Not saved yet: ${waiting(status.pending)}, retrying in ${seconds} s`;
      };
      tick();
      countdown = window.setInterval(tick, 1000);
      element.replaceChildren(
        h("span", { class: "status-dot" }),
        text,
        h("button", { type: "button", class: "link-button", title: status.reason, onclick: retryNow }, "Retry now"),
      );
    }
  }
}
