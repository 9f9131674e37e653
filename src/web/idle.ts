/**
 * Background work that must not land among the writer's keys: it waits until the writer has
 * pressed no key, clicked nothing and scrolled nothing for a moment, and then for an idle
 * moment of the browser. Keeping a 100,000-card tree on the device costs the page a task of
 * a tenth of a second or more (issue 27); run right after the tree opened, it slowed the
 * first keys the writer pressed.
 */

/** How long the writer must have left the page alone. */
export const PAUSE_MS = 2000;

const INPUT = ["keydown", "pointerdown", "wheel", "touchstart"] as const;

/** When the writer last pressed, clicked or scrolled (performance.now()), for every caller. */
let lastInput = -Infinity;
let listening = false;

function listen(): void {
  if (listening) return;
  listening = true;
  const note = () => (lastInput = performance.now());
  for (const type of INPUT) window.addEventListener(type, note, { capture: true, passive: true });
}

/**
 * Runs `task` once the writer has left the page alone for PAUSE_MS, counted from now at the
 * earliest (a tree just opened is when the first keys come), and the browser is idle (within
 * a few seconds of that).
 */
export function whenWriterPauses(task: () => void): void {
  listen();
  const asked = performance.now();
  const check = () => {
    const wait = Math.max(lastInput, asked) + PAUSE_MS - performance.now();
    if (wait > 0) {
      window.setTimeout(check, wait);
      return;
    }
    if (typeof window.requestIdleCallback === "function") window.requestIdleCallback(task, { timeout: 3000 });
    else window.setTimeout(task, 200);
  };
  check();
}
