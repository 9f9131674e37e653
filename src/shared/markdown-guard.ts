/**
 * A linear look at a card's Markdown before any renderer gets it, so that one hostile card
 * can neither take seconds to render nor overflow the stack (issue 12). marked (like most
 * Markdown parsers) is quadratic on emphasis delimiters that never match (`_a_a_a…`: every
 * opener scans to the end of its paragraph) and worse on nested ones (`*a **a *a … a** a*`),
 * and it recurses once per level of nested quotes and lists (3,000 `>` overflow a browser's
 * stack). A card past a limit is shown as its own text, escaped, with a note saying why.
 *
 * Used by every renderer: the browser client (src/web/markdown.ts), the html export and
 * the shared lexing of the docx and impress exports (src/formats/export/). Pure: no `node:`
 * imports, no DOM, so the browser bundle takes it as it is.
 *
 * The cost estimate: marked lexes inline Markdown one "inline run" at a time (a paragraph, a
 * heading, one list item's paragraph, one table row), and an unmatched delimiter (`*`, `_`,
 * `~`, and `$` and `` ` `` for the math finder) costs at most a scan of its run. So a card costs at most about
 * Σ delimiters × length over its runs; measured on marked 18 the worst known shapes take
 * 5–20 ns per unit. Runs are found here line by line, erring towards longer runs (which only
 * overestimates).
 */

export interface MarkdownLimits {
  /** Characters of Markdown rendered at all; longer cards are shown as text. */
  maxLength: number;
  /** Levels of nested quotes and lists. */
  maxNesting: number;
  /** Σ delimiters × length over the inline runs (see above). */
  maxCost: number;
}

/**
 * Measured with marked 18 on the shared two-core machine: the worst known emphasis shape at
 * `maxCost` takes ~15 ms, a 50,000-character table ~45 ms, 50,000 characters of prose ~12 ms.
 * The repository's own documents, each as one card, cost at most ~160,000 (docs/performance.md).
 */
export const MARKDOWN_LIMITS: Readonly<MarkdownLimits> = {
  maxLength: 50_000,
  maxNesting: 32,
  maxCost: 500_000,
};

export type MarkdownVerdict =
  | { ok: true; cost: number; nesting: number }
  | { ok: false; reason: "length" | "nesting" | "cost"; note: string };

const FENCE = /^(`{3,}|~{3,})/;
const ATX_HEADING = /^#{1,6}(?:[ \t]|$)/;
const TABLE_DELIMITER_ROW = /^\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

/** Whether `source` may be rendered as Markdown within `limits`. Linear; throws nothing. */
export function checkMarkdown(source: string, limits: Readonly<MarkdownLimits> = MARKDOWN_LIMITS): MarkdownVerdict {
  if (source.length > limits.maxLength) {
    return refuse("length", `it is longer than the ${thousands(limits.maxLength)} characters rendered as Markdown`);
  }
  let nesting = 0;
  let cost = 0;
  // The inline run being read: its length and delimiters so far.
  let runLength = 0;
  let runDelimiters = 0;
  let runIsListItem = false;
  let inTable = false;
  let fence: string | null = null;
  const endRun = () => {
    cost += runLength * runDelimiters;
    runLength = 0;
    runDelimiters = 0;
  };
  const lines = source.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const { depth, rest, listItem, ordinal } = containers(lines[i], limits.maxNesting);
    if (depth > nesting) {
      nesting = depth;
      if (nesting > limits.maxNesting) {
        return refuse("nesting", `its quotes and lists nest more than ${limits.maxNesting} levels deep`);
      }
    }
    const text = rest.trimStart();
    if (fence !== null) {
      if (text.startsWith(fence) && text.slice(fence.length).trim() === "") fence = null;
      continue;
    }
    const opening = FENCE.exec(text);
    if (opening) {
      endRun();
      fence = opening[1];
      inTable = false;
      continue;
    }
    if (text.trim() === "") {
      endRun();
      inTable = false;
      runIsListItem = false;
      continue;
    }
    // A bullet always starts a new item; a number other than 1 only inside a list (CommonMark).
    const newItem = listItem && (ordinal === undefined || ordinal === 1 || runIsListItem);
    const tableStart = !inTable && text.includes("|") && i + 1 < lines.length && TABLE_DELIMITER_ROW.test(containers(lines[i + 1], limits.maxNesting).rest.trim());
    if (newItem || inTable || tableStart || ATX_HEADING.test(text)) endRun();
    if (newItem) runIsListItem = true;
    if (tableStart) inTable = true;
    runLength += text.length + 1;
    runDelimiters += delimiters(text);
    if (cost + runLength * runDelimiters > limits.maxCost) {
      return refuse("cost", "its emphasis marks would take too long to render");
    }
  }
  endRun();
  return { ok: true, cost, nesting };
}

/** How many of `text`'s characters may open or close emphasis, math or code: `*`, `_`, `~`, `$`, `` ` ``. */
function delimiters(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x2a || code === 0x5f || code === 0x7e || code === 0x24 || code === 0x60) count++;
  }
  return count;
}

/**
 * The quote and list markers opening a line: how many (plus what its indentation could
 * nest), and the text after them. `ordinal` is the number of an ordered list marker.
 */
function containers(line: string, maxNesting: number): { depth: number; rest: string; listItem: boolean; ordinal?: number } {
  let at = 0;
  let ruleChecked = false;
  let indent = 0;
  while (at < line.length && (line[at] === " " || line[at] === "\t")) indent += line[at++] === "\t" ? 4 : 1;
  let markers = 0;
  let listItem = false;
  let ordinal: number | undefined;
  // Past the limit the count no longer matters: stopping keeps a line of 50,000 `- ` linear.
  while (markers <= maxNesting) {
    while (at < line.length && (line[at] === " " || line[at] === "\t")) at++;
    const c = line[at];
    if (c === ">") {
      markers++;
      at++;
      continue;
    }
    if ((c === "-" || c === "+" || c === "*") && /[ \t]|^$/.test(line[at + 1] ?? "")) {
      // `---` and `* * *` are rules, not lists; a lone `-` is an empty item.
      if (!ruleChecked && /^([-*_])[ \t]*(?:\1[ \t]*){2,}$/.test(line.slice(at))) break;
      ruleChecked = true;
      markers++;
      listItem = true;
      ordinal = undefined;
      at++;
      continue;
    }
    const number = /^(\d{1,9})[.)](?=[ \t]|$)/.exec(line.slice(at, at + 11));
    if (number) {
      markers++;
      listItem = true;
      ordinal = Number(number[1]);
      at += number[0].length;
      continue;
    }
    break;
  }
  // Indentation nests only under a marker (2 columns a level at the least).
  const depth = markers > 0 ? markers + Math.floor(indent / 2) : 0;
  return { depth, rest: line.slice(at), listItem, ordinal };
}

/**
 * 50000 as "50,000". Not `toLocaleString`: its first call loads the browser's number
 * formatting data, 40-150 ms on the main thread, paid by the reader of a hostile card.
 */
function thousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+$)/g, ",");
}

function refuse(reason: "length" | "nesting" | "cost", why: string): MarkdownVerdict {
  return { ok: false, reason, note: `Shown as plain text: ${why}.` };
}

/**
 * What a renderer shows instead of a card it may not render: the note, then the card's text
 * escaped in a `<pre>`. Safe to insert as HTML as it is.
 */
export function unrenderedHtml(source: string, note: string): string {
  return `<p class="unrendered-note"><em>${escapeHtml(note)}</em></p>\n<pre class="unrendered">${escapeHtml(source)}</pre>\n`;
}

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]);
}
