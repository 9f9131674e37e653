/**
 * Renders deferred cards (see card.ts) without keeping the writer waiting: a card as soon as
 * it scrolls into view, and the rest a few at a time while the browser is idle. Columns keep
 * their visible content still as cards above change height (CSS scroll anchoring).
 */
import { isDeferred } from "./card.js";

/** Idle time to spend per slice, in milliseconds. */
const SLICE_MS = 8;

export class DeferredRenderer {
  private readonly waiting = new Set<HTMLElement>();
  private readonly observer: IntersectionObserver;
  private scheduled = false;

  constructor(private readonly renderNow: (element: HTMLElement) => void) {
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) if (entry.isIntersecting) this.render(entry.target as HTMLElement);
    });
  }

  /** Takes in cards created deferred; other elements are ignored. */
  watch(elements: Iterable<HTMLElement>): void {
    for (const element of elements) {
      if (!isDeferred(element) || this.waiting.has(element)) continue;
      this.waiting.add(element);
      this.observer.observe(element);
    }
    this.schedule();
  }

  render(element: HTMLElement): void {
    if (!this.waiting.delete(element)) return;
    this.observer.unobserve(element);
    this.renderNow(element);
  }

  stop(): void {
    this.observer.disconnect();
    this.waiting.clear();
  }

  private schedule(): void {
    if (this.scheduled || this.waiting.size === 0) return;
    this.scheduled = true;
    const idle = window.requestIdleCallback ?? ((run: () => void) => window.setTimeout(run, 16));
    idle(() => {
      this.scheduled = false;
      const until = performance.now() + SLICE_MS;
      for (const element of this.waiting) {
        if (performance.now() > until) break;
        this.render(element);
      }
      this.schedule();
    });
  }
}
