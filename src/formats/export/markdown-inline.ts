/**
 * Card Markdown as plain data, for the exporters that write XML rather than HTML (docx,
 * impress) and for heading ids: marked's tokens, and inline tokens flattened into runs of
 * plain text with their styles. Text comes out decoded (no `&amp;`) and stripped of the
 * characters XML 1.0 cannot hold, so a card with a stray control character still gives a
 * document that opens.
 */
import { getDefaults, Lexer, type Token, type Tokens, type TokensList } from "marked";
import { checkMarkdown } from "../../shared/markdown-guard.js";
import { extractFootnotes } from "./footnotes.js";
import { protectMath } from "./math.js";

export interface LexedCard {
  tokens: TokensList;
  /** The card's YAML front matter, when it opens with one: kept as document properties, not shown. */
  properties?: DocumentProperties;
  /** The card's footnote definitions by label (footnotes.ts); references are marks in the text. */
  footnotes?: Map<string, string>;
  /**
   * Puts math back into text taken from the tokens (identity unless the tree has `latex`),
   * each span through `encode` when given (see `protectMath`).
   */
  restore: (text: string, encode?: (math: string, inUrl: boolean) => string) => string;
}

const identity = (text: string) => text;

/**
 * Tokens of one card. With `latex`, math spans come through as text, untouched by Markdown.
 * A card too costly or too deep for marked (src/formats/markdown-guard.ts) comes back as a
 * note and its text as a code block, the way the html export and the browser show it.
 */
export function lexCard(content: string, latex: boolean): LexedCard {
  return lexCards([content], latex)[0];
}

/**
 * Tokens of the cards of one export, which reads as one document: a reference link
 * (`[text][ref]`) finds its definition in any card, the card's own first, then the first
 * card in tree order that defines it. marked lexes blocks (where definitions are found)
 * before inline text, so every card's blocks are lexed before any card's inline text.
 */
export function lexCards(contents: readonly string[], latex: boolean): LexedCard[] {
  const started = contents.map((whole) => {
    const verdict = checkMarkdown(whole);
    if (!verdict.ok) return { done: { tokens: unrenderedTokens(whole, verdict.note), restore: identity } };
    const { body: withNotes, properties } = frontMatter(whole);
    const { body: content, definitions: footnotes } = extractFootnotes(withNotes);
    const math = latex ? protectMath(content) : undefined;
    // A private lexer with marked's defaults: options set on the global `marked` elsewhere cannot change exports.
    const lexer = new Lexer({ ...getDefaults(), gfm: true });
    lexer.blockTokens((math ? math.text : content).replace(/\r\n?/g, "\n"), lexer.tokens);
    const restore: LexedCard["restore"] = math ? (text, encode) => math.restore(text, encode) : identity;
    return { lexer, restore, properties, footnotes };
  });
  const definitions: TokensList["links"] = Object.create(null);
  for (const { lexer } of started) {
    for (const [tag, link] of Object.entries(lexer?.tokens.links ?? {})) definitions[tag] ??= link;
  }
  return started.map(({ done, lexer, restore, properties, footnotes }) => {
    if (done) return done;
    const own = lexer!.tokens.links;
    for (const [tag, link] of Object.entries(definitions)) own[tag] ??= link;
    // What marked's own lex() does after the blocks.
    for (const next of lexer!.inlineQueue) {
      lexer!.state.inRawBlock = false;
      lexer!.inlineTokens(next.src, next.tokens);
    }
    lexer!.inlineQueue = [];
    return { tokens: lexer!.tokens, restore: restore!, properties, footnotes };
  });
}

/**
 * What a document's YAML front matter may say, as pandoc reads it: title, author(s), subject,
 * description (or abstract), keywords (or tags), date. Other keys are kept too, as text.
 */
export type DocumentProperties = Record<string, string>;

// `---` first, the YAML, then `---` or `...` on a line of its own.
const FRONT_MATTER = /^---[ \t]*\n([^]*?)\n(?:---|\.\.\.)[ \t]*(?:\n|$)/;
const YAML_KEY = /^([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*)$/;

/**
 * A card's YAML front matter, read as the flat `key: value` map documents use (lists as
 * `[a, b]` or `- item` lines are joined with ", "), and the card without it. A block
 * whose lines are not all of that shape is not front matter (`---` then text then `---`
 * is a rule and a heading in Markdown). Throws nothing.
 */
export function frontMatter(content: string): { body: string; properties?: DocumentProperties } {
  const match = FRONT_MATTER.exec(content.replace(/^\uFEFF/, ""));
  if (!match) return { body: content };
  const properties: DocumentProperties = {};
  let key: string | undefined;
  for (const line of match[1].split("\n")) {
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    const pair = YAML_KEY.exec(line);
    const item = /^[ \t]+-[ \t]+(.*)$/.exec(line);
    if (pair) {
      key = pair[1].toLowerCase();
      properties[key] = yamlScalar(pair[2]);
    } else if (item && key !== undefined) {
      properties[key] = [properties[key], yamlScalar(item[1])].filter(Boolean).join(", ");
    } else if (/^[ \t]+\S/.test(line) && key !== undefined) {
      properties[key] = `${properties[key]} ${line.trim()}`.trim();
    } else {
      return { body: content };
    }
  }
  return { body: content.slice(match[0].length), properties };
}

function yamlScalar(value: string): string {
  const text = value.trim();
  if (/^\[.*\]$/.test(text)) return text.slice(1, -1).split(",").map(yamlScalar).filter(Boolean).join(", ");
  if (/^"(?:[^"\\]|\\.)*"$/.test(text)) return text.slice(1, -1).replace(/\\(["\\])/g, "$1");
  if (/^'(?:[^']|'')*'$/.test(text)) return text.slice(1, -1).replace(/''/g, "'");
  return text.replace(/[ \t]+#.*$/, "");
}

/** The properties of the first card that has front matter, pandoc's names mapped to the document's. */
export function documentProperties(lexed: readonly LexedCard[]) {
  const found = lexed.find((card) => card.properties)?.properties ?? {};
  const pick = (...keys: string[]) => keys.map((key) => found[key]).find((value) => value !== undefined && value !== "");
  return {
    title: pick("title"),
    author: pick("author", "authors"),
    subject: pick("subject", "subtitle"),
    description: pick("description", "abstract", "summary"),
    keywords: pick("keywords", "tags"),
    lang: pick("lang", "language"),
  };
}

function unrenderedTokens(content: string, note: string): TokensList {
  const text: Tokens.Text = { type: "text", raw: note, text: note };
  const em: Tokens.Em = { type: "em", raw: note, text: note, tokens: [text] };
  const paragraph: Tokens.Paragraph = { type: "paragraph", raw: note, text: note, tokens: [em] };
  const code: Tokens.Code = { type: "code", raw: content, text: content, lang: "" };
  return Object.assign([paragraph, code] as Token[], { links: {} });
}

/**
 * Marks around a math span in run text, for exporters that typeset it themselves (docx):
 * `restoreMarked` puts math back between them; `splitMath` cuts a run's text at them.
 */
const MATH_OPEN = "\uE002";
const MATH_CLOSE = "\uE003";

/** `restore` that puts each math span back between marks (outside URLs). */
export function restoreMarked(restore: LexedCard["restore"]): (text: string) => string {
  return (text) => restore(text, (span, inUrl) => (inUrl ? span : `${MATH_OPEN}${span}${MATH_CLOSE}`));
}

/** A run's text as plain text and math spans, in order. */
export function splitMath(text: string): { text: string; math: boolean }[] {
  if (!text.includes(MATH_OPEN)) return [{ text, math: false }];
  const parts: { text: string; math: boolean }[] = [];
  for (const [, plain, math] of text.matchAll(/([^\uE002]+)|\uE002([^\uE003]*)\uE003?/g)) {
    if (plain !== undefined) parts.push({ text: plain, math: false });
    else if (math !== undefined) parts.push({ text: math, math: true });
  }
  return parts;
}

/** A footnote's (or any short) Markdown as inline tokens, for the exporters' note text. */
export function inlineMarkdown(text: string): Token[] {
  return new Lexer({ ...getDefaults(), gfm: true }).inlineTokens(text);
}

export interface InlineRun {
  text: string;
  bold?: boolean;
  italic?: boolean;
  strike?: boolean;
  code?: boolean;
  /**
   * Where the run links to: an absolute http, https or mailto URL, or a relative one (a file
   * beside the document); other destinations (javascript:, data:) stay plain text.
   */
  link?: string;
  /** A link inside the document: the heading id (`#installing` → `installing`). */
  anchor?: string;
  /** A hard line break comes before this run's text. */
  break?: boolean;
}

type Style = Omit<InlineRun, "text" | "break">;

/** Inline tokens as styled runs of plain text. Throws nothing. */
export function inlineRuns(tokens: readonly Token[], restore: (text: string) => string = (t) => t): InlineRun[] {
  const runs: InlineRun[] = [];
  appendRuns(runs, tokens, {}, restore);
  return runs;
}

/** Inline tokens as one plain string (headings as titles, table cells in slides). */
export function inlineText(tokens: readonly Token[], restore?: (text: string) => string): string {
  return inlineRuns(tokens, restore)
    .map((run) => (run.break ? "\n" : "") + run.text)
    .join("");
}

/** One item of a Markdown list, cut the way the docx and impress exports lay it out. */
export interface ListItemParts {
  /** The item's number in an ordered list: the list's start (1 if marked gives none) plus its index. */
  number: number;
  /** The "\u2610 " / "\u2611 " run of a task item, to go before its text; empty for other items. */
  marker: InlineRun[];
  /**
   * Inline tokens of the item's first block when that block is text or a paragraph: they go on
   * the line with the bullet or number. Undefined when the item opens with anything else (code,
   * a quote, a nested list) or is empty; the bullet or number still gets a line of its own.
   */
  head?: Token[];
  /** The item's other blocks, in order, to be laid out one list level deeper. */
  rest: Token[];
}

/**
 * The items of one list as bullet line and nested blocks. Only this list: a nested list in
 * `rest` comes back through the exporter, which knows how deep it sits. Throws nothing.
 */
export function listItems(list: Tokens.List): ListItemParts[] {
  const start = typeof list.start === "number" ? list.start : 1;
  return list.items.map((item, index) => {
    let marker: InlineRun[] = [];
    let head: Token[] | undefined;
    let placed = false;
    const rest: Token[] = [];
    for (const block of item.tokens) {
      if (block.type === "checkbox") {
        if (!placed) marker = inlineRuns([block]);
      } else if (!placed && (block.type === "text" || block.type === "paragraph")) {
        head = (block as Tokens.Text).tokens ?? [block];
        placed = true;
      } else {
        placed = true;
        rest.push(block);
      }
    }
    return { number: start + index, marker, head, rest };
  });
}

// Recursion here follows one card's inline nesting (emphasis inside a link inside...),
// which marked itself builds recursively; tree depth never reaches it.
function appendRuns(runs: InlineRun[], tokens: readonly Token[], style: Style, restore: (text: string) => string) {
  const push = (text: string, extra: Partial<InlineRun> = {}) => {
    const clean = xmlSafe(restore(text));
    if (clean !== "" || extra.break) runs.push({ ...style, ...extra, text: clean });
  };
  for (const token of tokens) {
    switch (token.type) {
      case "text":
        if (token.tokens && token.tokens.length > 0) appendRuns(runs, token.tokens, style, restore);
        // A soft line break in Markdown is a space in the rendered text.
        else push(decodeEntities(token.text).replace(/[ \t]*\n[ \t]*/g, " "));
        break;
      case "escape":
        push(token.text);
        break;
      case "codespan":
        push(token.text, { code: true });
        break;
      case "strong":
        appendRuns(runs, token.tokens ?? [], { ...style, bold: true }, restore);
        break;
      case "em":
        appendRuns(runs, token.tokens ?? [], { ...style, italic: true }, restore);
        break;
      case "del":
        appendRuns(runs, token.tokens ?? [], { ...style, strike: true }, restore);
        break;
      case "br":
        push("", { break: true });
        break;
      case "link": {
        // Autolinks are literal; in [text](url) character references count.
        const href = restore(token.autolink ? token.href : decodeEntities(token.href)).replace(/[\uE002\uE003]/g, "");
        const anchor = href.startsWith("#") ? decodeFragment(href.slice(1)) : undefined;
        const link = anchor === undefined ? (safeLinkTarget(href) ?? relativeLinkTarget(href)) : undefined;
        const inner = link !== undefined || anchor !== undefined ? { link, anchor } : {};
        appendRuns(runs, token.tokens ?? [], { ...style, ...inner }, restore);
        break;
      }
      case "image":
        appendImage(push, decodeEntities(token.text), restore(decodeEntities(token.href)));
        break;
      case "html":
        // Inline HTML is only tags; their text arrives as text tokens around them.
        if (/^<br\s*\/?>$/i.test(token.text)) push("", { break: true });
        break;
      case "checkbox":
        push(token.checked ? "\u2611 " : "\u2610 ");
        break;
      default: {
        // Tokens of extensions marked may grow: keep whatever text they carry.
        const other = token as Tokens.Generic;
        if (other.tokens) appendRuns(runs, other.tokens, style, restore);
        else if (typeof other.text === "string") push(other.text);
      }
    }
  }
}

/** Office documents here embed no images: the alt text stands in, with where the image lives. */
function appendImage(push: (text: string, extra?: Partial<InlineRun>) => void, alt: string, href: string) {
  push(alt || "image", { italic: true });
  if (/^\s*data:/i.test(href)) {
    push(" (embedded image)");
    return;
  }
  push(" (");
  push(href, { link: safeLinkTarget(href) });
  push(")");
}

/** `href` as an absolute http, https or mailto URL; undefined for anything else (relative, javascript:, data:). */
export function safeLinkTarget(href: string): string | undefined {
  try {
    const url = new URL(href.trim());
    return ["http:", "https:", "mailto:"].includes(url.protocol) ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `href` as a relative URL (`notes.md`, `../img/a.png`, `/docs/`), made safe to write into a
 * package's relationships; undefined for anything with a scheme or a host (`//host/x`).
 */
export function relativeLinkTarget(href: string): string | undefined {
  const trimmed = href.trim();
  if (trimmed === "" || /^[a-z][a-z0-9+.-]*:/i.test(trimmed) || /^[\\/]{2}/.test(trimmed) || /[\u0000-\u001f]/.test(trimmed)) return undefined;
  return encodeURI(decodeFragment(trimmed));
}

function decodeFragment(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Heading ids, GitHub-style, unique across one document (the html page, the Word file). */
export class Slugger {
  private readonly used = new Set<string>();
  private readonly next = new Map<string, number>();

  /** Lower case letters, digits, `-` and `_`; repeats get `-2`, `-3`... */
  slug(text: string): string {
    const base =
      text
        .toLowerCase()
        .trim()
        .replace(/[^\p{L}\p{N}\s_-]/gu, "")
        .replace(/\s+/g, "-") || "section";
    // Counting per base keeps 5,000 cards titled "Notes" linear rather than quadratic.
    let n = this.next.get(base) ?? 1;
    let slug = n === 1 ? base : `${base}-${n}`;
    while (this.used.has(slug)) slug = `${base}-${++n}`;
    this.next.set(base, n + 1);
    this.used.add(slug);
    return slug;
  }
}

/** The heading tokens of `tokens` and the blocks nested in them (quotes, list items), in document order. */
export function headingTokens(tokens: readonly Token[]): Tokens.Heading[] {
  const found: Tokens.Heading[] = [];
  const stack: Token[][] = [[...tokens].reverse()];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const token = top.pop();
    if (token === undefined) {
      stack.pop();
      continue;
    }
    if (token.type === "heading") found.push(token as Tokens.Heading);
    else if (token.type === "list") stack.push((token as Tokens.List).items.flatMap((item) => item.tokens).reverse());
    else if (token.type === "blockquote") stack.push([...(token as Tokens.Blockquote).tokens].reverse());
  }
  return found;
}

// Characters XML 1.0 allows: tab, newline, carriage return, and the planes minus the
// surrogates and U+FFFE/U+FFFF. With the u flag a lone surrogate is one unmatched code point.
const NOT_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** `text` without the characters an XML document cannot hold. */
export function xmlSafe(text: string): string {
  return text.replace(NOT_XML, "");
}

// The references people actually type; others stay as written rather than pulling in a
// 2,000-entry table.
const NAMED: Record<string, string> = {
  amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0", copy: "\u00a9", reg: "\u00ae",
  trade: "\u2122", hellip: "\u2026", mdash: "\u2014", ndash: "\u2013", lsquo: "\u2018", rsquo: "\u2019",
  ldquo: "\u201c", rdquo: "\u201d", laquo: "\u00ab", raquo: "\u00bb", middot: "\u00b7", bull: "\u2022",
  deg: "\u00b0", times: "\u00d7", divide: "\u00f7", euro: "\u20ac", pound: "\u00a3", yen: "\u00a5",
  sect: "\u00a7", para: "\u00b6", shy: "\u00ad",
};

/**
 * The text of a raw HTML block for formats that cannot hold HTML structure (docx, pptx):
 * comments and tags dropped, entities resolved, math put back (`restore`), lines joined,
 * and made safe for XML. "" when nothing is left.
 */
export function htmlBlockText(html: string, restore: (text: string) => string): string {
  const text = decodeEntities(html.replace(/<!--[\s\S]*?-->|<[^>]*>/g, "")).trim();
  return text === "" ? "" : xmlSafe(restore(text)).replace(/\s*\n\s*/g, " ");
}

/** Resolves character references (`&amp;`, `&#233;`, `&#xE9;`) the way a browser would show them. */
export function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(/&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]+));/g, (whole, dec, hex, name) => {
    if (name !== undefined) return NAMED[name] ?? whole;
    const code = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex, 16);
    const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
    return valid ? String.fromCodePoint(code) : "\uFFFD";
  });
}
