/**
 * Progress of the long operations (opening a big tree, importing, pasting, exporting): a
 * panel at the bottom of the window, an aria-live status, that says which step is running,
 * how far along it is when that is known, and how long it has taken. Long work yields between
 * its steps (`nextTask`), so the page keeps answering and the panel is actually drawn.
 */
import { h } from "../dom.js";

export interface Progress {
  step(text: string): void;
  /** 0..1 when known; null for "working, no estimate". */
  fraction(value: number | null): void;
  close(): void;
}

/** Shows nothing for operations done within this many milliseconds. */
const SHOW_AFTER_MS = 250;

export function showProgress(title: string, detail: string): Progress {
  const started = performance.now();
  const text = h("span", { class: "progress-step" }, detail);
  const elapsed = h("span", { class: "progress-time" });
  const bar = h("progress", { class: "progress-bar", "aria-label": title });
  const panel = h("div", { class: "progress-panel", role: "status", "aria-live": "polite", hidden: true }, h("strong", {}, title), text, bar, elapsed);
  document.body.append(panel);
  const show = window.setTimeout(() => (panel.hidden = false), SHOW_AFTER_MS);
  const clock = window.setInterval(() => (elapsed.textContent = `${Math.round((performance.now() - started) / 1000)} s`), 1000);
  return {
    step(next) {
      text.textContent = next;
    },
    fraction(value) {
      if (value === null) bar.removeAttribute("value");
      else bar.value = value;
    },
    close() {
      window.clearTimeout(show);
      window.clearInterval(clock);
      panel.remove();
    },
  };
}

/** Lets the browser draw and handle input before the next slice of work. */
export function nextTask(): Promise<void> {
  return new Promise((resolve) => window.setTimeout(resolve, 0));
}

/**
 * Like nextTask, but without the wait browsers put on a timer set from the fifth nested one on
 * (4 ms each): a chain of short tasks on the way to a first screen (TreeController.prepare)
 * would add that much a link before anything is shown. A task of the page's ordinary
 * priority where the browser has `scheduler.postTask` (Chromium), else a timer.
 */
export function nextTaskUnclamped(): Promise<void> {
  const scheduler = (globalThis as { scheduler?: { postTask?: (run: () => void, options: { priority: string }) => Promise<unknown> } }).scheduler;
  if (scheduler?.postTask) return scheduler.postTask(() => undefined, { priority: "user-visible" }).then(() => undefined);
  return nextTask();
}

/**
 * Resolves in a task after the browser drew a frame (or after 100 ms, for a tab not shown):
 * what was put in the page before is then laid out, not by the next task's first read of it.
 */
export function nextFrame(): Promise<void> {
  return new Promise((resolve) => {
    const timer = window.setTimeout(resolve, 100);
    requestAnimationFrame(() => {
      window.clearTimeout(timer);
      window.setTimeout(resolve, 0);
    });
  });
}

/**
 * 20000 as "20,000". Not `toLocaleString`: its first call loads the browser's number
 * formatting data, tens of milliseconds on a phone's main thread while a tree opens.
 */
export function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+$)/g, ",");
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(0)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
