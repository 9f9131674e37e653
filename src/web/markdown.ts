/**
 * Card Markdown to HTML: marked renders, DOMPurify removes anything that could run (script,
 * event handlers, javascript: URLs, forms). This is the only source of HTML the app inserts.
 * The one form control that survives is a task list's checkbox (`- [ ] item`), which the card
 * view makes clickable (views/card.ts). Images from other hosts are held back here unless
 * the page loads them (remote-images.ts): their address moves to `data-remote-src` in the
 * sanitizer's inert document, before any of it reaches the page.
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";
import { checkMarkdown, unrenderedHtml } from "../shared/markdown-guard.js";
import { isRemoteImage, type RemoteImages } from "./remote-images.js";
import { firstWords } from "../shared/text.js";

const marked = new Marked({ gfm: true, breaks: false, async: false });

// Links in cards open beside the app: a writer clicking a reference must not lose their place.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node instanceof HTMLAnchorElement && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

// Task-list checkboxes only: any other input, and every attribute but these, goes.
const CHECKBOX_ATTRIBUTES = new Set(["type", "checked", "disabled"]);
DOMPurify.addHook("uponSanitizeElement", (node, data) => {
  if (data.tagName === "input" && (node as Element).getAttribute?.("type") !== "checkbox") node.parentNode?.removeChild(node);
});
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (!(node instanceof HTMLInputElement)) return;
  for (const name of node.getAttributeNames()) if (!CHECKBOX_ATTRIBUTES.has(name)) node.removeAttribute(name);
});

/** What the sanitize call under way does with remote images (the hooks are global). */
let sanitizing: RemoteImages = "load";
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (sanitizing === "load" || !(node instanceof HTMLImageElement)) return;
  const src = node.getAttribute("src");
  node.removeAttribute("srcset");
  if (src === null || !isRemoteImage(src)) return;
  node.removeAttribute("src");
  node.setAttribute("data-remote-src", src);
});

const cache = new Map<string, string>();
const CACHE_LIMIT = 5000;

/** The card's HTML; `remoteImages`: whether images from other hosts keep their address. */
export function renderMarkdown(source: string, remoteImages: RemoteImages = "load"): string {
  const key = remoteImages === "load" ? source : `${remoteImages}\u0000${source}`;
  const cached = cache.get(key);
  if (cached !== undefined) return cached;
  // A card too costly or too deep for marked is shown as its text (issue 12).
  const verdict = checkMarkdown(source);
  const rendered = verdict.ok ? (marked.parse(spaceHeadings(source)) as string) : unrenderedHtml(source, verdict.note);
  sanitizing = remoteImages;
  let html: string;
  try {
    html = DOMPurify.sanitize(rendered, {
      USE_PROFILES: { html: true },
      FORBID_TAGS: ["style", "form", "button", "textarea", "select", "iframe", "object", "embed"],
      FORBID_ATTR: ["style"],
    });
  } finally {
    sanitizing = "load";
  }
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(key, html);
  return html;
}

/** What cards commonly hold, one kind at a time: each is rendered in a task of its own. */
const SAMPLES = [
  "Words.",
  "# Heading",
  "Some *words* and **more**, _this_.",
  "`code` and [a link](https://example.org).",
  "- one\n- [ ] two",
  "> quoted",
  "```\nx = 1\n```",
  "| a | b |\n|---|---|\n| 1 | 2 |",
];

/**
 * Renders small samples of what cards hold, each in a task of its own: the first cards
 * rendered otherwise pay for compiling the parser's and sanitizer's code and patterns (about
 * 100 ms on a slow phone) in the task that draws the tree's first screen. In pieces, no task
 * is long (Lighthouse counts every task over 50 ms at a phone's speed, including those while
 * the page waits for the network). The app starts it while it waits for the server's first
 * answer (main.ts). A sample renders to the same HTML wherever it is drawn, so its cache
 * entries are harmless.
 */
export function warmMarkdown(): void {
  let next = 0;
  const step = () => {
    renderMarkdown(SAMPLES[next++]);
    if (next < SAMPLES.length) setTimeout(step, 0);
  };
  setTimeout(step, 0);
}

/**
 * Gingko wrote headings as `#Title` (no space) and rendered them as headings; CommonMark needs
 * the space. Adds it outside fenced code so old trees look as their authors saw them.
 */
function spaceHeadings(source: string): string {
  if (!/^#{1,6}[^#\s]/m.test(source)) return source;
  let fence: string | null = null;
  return source
    .split("\n")
    .map((line) => {
      const opening = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
      if (opening) {
        if (fence === null) fence = opening[1][0];
        else if (opening[1][0] === fence) fence = null;
        return line;
      }
      return fence === null ? line.replace(/^(#{1,6})(?=[^#\s])/, "$1 ") : line;
    })
    .join("\n");
}

/** The first line of a card as plain text, for dialogs and labels ("Delete “Act II”?"). */
export function cardTitle(content: string, max = 60): string {
  return firstWords(content, max);
}
