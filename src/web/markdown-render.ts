/**
 * Card Markdown to HTML (loaded on demand through markdown.ts, which says why): marked renders, DOMPurify removes anything that could run (script,
 * event handlers, javascript: URLs, forms). This is the only source of HTML the app inserts.
 * The one form control that survives is a task list's checkbox (`- [ ] item`), which the card
 * view makes clickable (views/card.ts). Images from other hosts are held back here unless
 * the page loads them (remote-images.ts): their address moves to `data-remote-src` in the
 * sanitizer's inert document, before any of it reaches the page.
 */
import DOMPurify from "dompurify";
import { Lexer, Marked } from "marked";
import { checkMarkdown, unrenderedHtml } from "../shared/markdown-guard.js";
import { isRemoteImage, type RemoteImages } from "./remote-images.js";
import "./shared-chunk.js";

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

/** What cards commonly hold, one kind at a time: each is rendered in a step of its own. */
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

/** A subject for compiling the parser's patterns: one-byte text, as most cards are. */
const PATTERN_SUBJECT = "Some *words*, `code` and [a link](https://example.org).\n";

/** How long one task of the warm-up runs before it lets the browser have a turn. */
const WARM_SLICE_MS = 3;

/** Patterns longer than this (marked's long alternations) are compiled in a task of their own. */
const LONG_PATTERN = 400;

interface WarmStep {
  run: () => void;
  /** Costly alone (~5-11 ms here, four times that on a slow phone): a task of its own. */
  alone: boolean;
}

/**
 * Makes the Markdown renderer ready for the cards of a tree page, in short tasks, while the
 * app waits for the server's first answers (main.ts). The first use of the renderer pays for
 * compiling marked's patterns (a few are long alternations: the one that finds a setext
 * heading alone takes ~11 ms here; the browser compiles each on its first run, and to
 * machine code on a later one), for the sanitizer's set-up, and for the first run of their
 * code: ~38 ms here in one task, ~150 ms on a phone four times slower, all of it blocking
 * time. Here each long pattern is run twice, each run a task of its own (the first makes its
 * bytecode, the second its machine code), the short ones together, then the sanitizer is set up and small samples of
 * what cards hold are rendered, in tasks of about WARM_SLICE_MS. The patterns are the
 * objects marked itself runs (`Lexer.rules`, the rules of this renderer's options), so what
 * is compiled here is what rendering uses; their `lastIndex` is put back after each run. A
 * sample renders to the same HTML wherever it is drawn, so its cache entries are harmless.
 * Resolves once the last step has run.
 */
export function warmMarkdown(): Promise<void> {
  const steps = warmUpSteps();
  let next = 0;
  return new Promise((resolve) => {
    const slice = () => {
      const until = performance.now() + WARM_SLICE_MS;
      let first = true;
      try {
        while (next < steps.length && (first || (!steps[next].alone && performance.now() < until))) {
          const step = steps[next++];
          step.run();
          if (step.alone) break;
          first = false;
        }
      } finally {
        // A step that throws is reported as before; the warm-up goes on, and ends.
        if (next < steps.length) setTimeout(slice, 0);
        else resolve();
      }
    };
    setTimeout(slice, 0);
  });
}

function warmUpSteps(): WarmStep[] {
  const steps: WarmStep[] = [];
  const { block, inline } = Lexer.rules;
  for (const rules of [block.gfm, inline.gfm]) {
    for (const pattern of Object.values(rules) as unknown[]) {
      if (!(pattern instanceof RegExp)) continue;
      if (pattern.source.length > LONG_PATTERN) {
        // Its first run (bytecode) and its second (machine code) each in a task of their own:
        // together the longest one took ~10 ms here, the first run three quarters of it.
        steps.push({ run: () => runPattern(pattern), alone: true }, { run: () => runPattern(pattern), alone: true });
      } else {
        steps.push({
          run: () => {
            runPattern(pattern);
            runPattern(pattern);
          },
          alone: false,
        });
      }
    }
  }
  steps.push({ run: () => renderMarkdown(""), alone: true });
  // The first sample runs marked's code for the first time (~8 ms here).
  SAMPLES.forEach((sample, index) => steps.push({ run: () => renderMarkdown(sample), alone: index === 0 }));
  return steps;
}

/** Runs `pattern` once on a sample (compiling it, or on its second run tiering it up), its `lastIndex` put back. */
function runPattern(pattern: RegExp): void {
  const lastIndex = pattern.lastIndex;
  pattern.lastIndex = 0;
  pattern.exec(PATTERN_SUBJECT);
  pattern.lastIndex = lastIndex;
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
