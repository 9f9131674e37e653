/**
 * Card Markdown to HTML, through the renderer in markdown-render.ts (marked and DOMPurify),
 * which is a chunk of its own loaded with `import()`: evaluating it (marked builds its ~100
 * patterns from strings, DOMPurify its allow-lists) took ~40-60 ms of a phone's time inside
 * the one task that evaluates the app's script, which Lighthouse counts as blocking in full;
 * loaded apart, it is a task of its own, while the page waits for the server anyway. Pages
 * that show cards (the tree page, a public page) call `loadMarkdown()` as they start and wait
 * for it before their first card is drawn (every card is drawn by views/columns.ts, made by
 * those pages' TreeController); the app starts it at once on such an address (main.ts,
 * `warmMarkdown`). Like every chunk, it is kept by the service worker, so it loads offline.
 */
import { firstWords } from "../shared/text.js";
import type { RemoteImages } from "./remote-images.js";

type Renderer = typeof import("./markdown-render.js");

let renderer: Renderer | null = null;
let loading: Promise<Renderer> | null = null;
/** The warm-up started by `warmMarkdown`, settled when it is done (or the renderer failed to load). */
let warming: Promise<void> | null = null;

/** Loads the renderer (once); resolves when `renderMarkdown` can be called. A failed load is tried again by the next call. */
export function loadMarkdown(): Promise<void> {
  // DOMPurify first, then marked with the renderer: each module graph is evaluated in a task
  // of its own (the second import's graph is loaded, then evaluated, in a later task).
  loading ??= import("dompurify")
    .then(() => import("./markdown-render.js"))
    .then(
      (loaded) => (renderer = loaded),
      (error: unknown) => {
        loading = null;
        throw error;
      },
    );
  return loading.then(() => undefined);
}

/** The card's HTML; `remoteImages`: whether images from other hosts keep their address. Only after `loadMarkdown()` resolved. */
export function renderMarkdown(source: string, remoteImages: RemoteImages = "load"): string {
  if (!renderer) throw new Error("renderMarkdown before loadMarkdown() resolved");
  return renderer.renderMarkdown(source, remoteImages);
}

/**
 * Loads the renderer and makes it ready for a tree's cards in short tasks (markdown-render.ts),
 * while the app waits for the server's first answers. A failed load is left to the page's own
 * `loadMarkdown()`, which says so.
 */
export function warmMarkdown(): void {
  warming ??= loadMarkdown().then(
    () => renderer!.warmMarkdown(),
    () => undefined,
  );
}

/**
 * What a page that draws cards waits for: the renderer loaded and, when the app started the
 * warm-up, that warm-up done. Cards that came before it ended had their first screen pay for
 * compiling marked's patterns and the sanitizer's first use in its one task (issue 27, TBT);
 * the warm-up's own tasks are short. Not in a hidden tab: there the browser runs its timers
 * about once a second, and the warm-up's few dozen would hold the page for that many seconds.
 * Rejects when the renderer cannot be loaded.
 */
export function markdownReady(): Promise<void> {
  return warming && document.visibilityState !== "hidden" ? warming.then(() => loadMarkdown()) : loadMarkdown();
}

/** The first line of a card as plain text, for dialogs and labels ("Delete “Act II”?"). */
export function cardTitle(content: string, max = 60): string {
  return firstWords(content, max);
}
