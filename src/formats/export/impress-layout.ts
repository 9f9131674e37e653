/**
 * How one card becomes slides in the impress export: its first heading is the title, the
 * rest of its Markdown becomes paragraphs (bold, italic, code and links kept as runs;
 * list items as bullets or numbers with their nesting level), and the paragraphs are
 * dealt onto as many slides as they need, so a long card continues on the next slide
 * instead of running off the bottom. Slide text does not wrap itself into pages, so the
 * split works from an estimate of wrapped lines; it errs on the side of spare room.
 */
import type { Token, Tokens } from "marked";
import { htmlBlockText, inlineRuns, inlineText, listItems, xmlSafe, type InlineRun, type LexedCard } from "./markdown-inline.js";

export interface SlideParagraph {
  runs: InlineRun[];
  kind: "text" | "heading" | "code" | "quote";
  /** Nesting level of list items, 0 at the left edge. */
  level: number;
  /** List items: a bullet, or a number within the Markdown list `list`. */
  bullet?: { numbered: false } | { numbered: true; list: number; number: number };
}

export interface CardSlides {
  /** The text of the card's first heading; absent when the card has none. */
  title?: string;
  /** The body of each slide, at least one (empty for an empty card). */
  pages: SlideParagraph[][];
}

/** Estimated room on a slide, in lines of body text, with and without a title above. */
const LINES_WITH_TITLE = 12;
const LINES_WITHOUT_TITLE = 14;
/** Characters of body text per line: 9 inches of 18-point text, with some to spare. */
const CHARS_PER_LINE = 66;
/** Each level of list nesting takes about this many characters of width. */
const CHARS_PER_LEVEL = 4;
const MAX_LEVEL = 8;

/** The slides of one card, from its tokens (`lexCards`). Throws nothing. */
export function cardSlides({ tokens, restore }: LexedCard): CardSlides {
  const titleIndex = tokens.findIndex((token) => token.type === "heading");
  const title = titleIndex >= 0 ? inlineText((tokens[titleIndex] as Tokens.Heading).tokens, restore).trim() : undefined;
  const body = new ParagraphWriter(restore);
  body.blocks(
    tokens.filter((_, i) => i !== titleIndex),
    { level: -1, quote: false },
  );
  const hasTitle = title !== undefined && title !== "";
  return {
    title: hasTitle ? title : undefined,
    pages: paginate(body.out, hasTitle ? LINES_WITH_TITLE : LINES_WITHOUT_TITLE),
  };
}

interface Context {
  /** Level of the innermost list item, -1 outside lists. */
  level: number;
  quote: boolean;
}

class ParagraphWriter {
  readonly out: SlideParagraph[] = [];
  private listCount = 0;

  constructor(private readonly restore: (text: string) => string) {}

  blocks(tokens: readonly Token[], ctx: Context) {
    for (const token of tokens) this.block(token, ctx);
  }

  private block(token: Token, ctx: Context) {
    switch (token.type) {
      case "heading":
        this.push(
          inlineRuns((token as Tokens.Heading).tokens, this.restore).map((run) => ({ ...run, bold: true })),
          "heading",
          ctx,
        );
        break;
      case "paragraph":
        this.push(inlineRuns((token as Tokens.Paragraph).tokens, this.restore), ctx.quote ? "quote" : "text", ctx);
        break;
      case "text":
        this.push(inlineRuns((token as Tokens.Text).tokens ?? [token], this.restore), ctx.quote ? "quote" : "text", ctx);
        break;
      case "list":
        this.list(token as Tokens.List, ctx);
        break;
      case "blockquote":
        this.blocks((token as Tokens.Blockquote).tokens, { ...ctx, quote: true });
        break;
      case "code":
        // A blank line of code still takes its line on the slide.
        for (const line of xmlSafe(this.restore((token as Tokens.Code).text)).replace(/\t/g, "    ").split("\n")) {
          this.push([{ text: line === "" ? " " : line, code: true }], "code", ctx);
        }
        break;
      case "table": {
        // Slides get the table as lines of cells: a real table cannot be split across slides.
        const table = token as Tokens.Table;
        const row = (cells: Tokens.TableCell[], header: boolean) =>
          cells.flatMap((cell, i) => [
            ...(i > 0 ? [{ text: " | " }] : []),
            ...inlineRuns(cell.tokens, this.restore).map((run) => (header ? { ...run, bold: true } : run)),
          ]);
        this.push(row(table.header, true), "text", ctx);
        for (const cells of table.rows) this.push(row(cells, false), "text", ctx);
        break;
      }
      case "html": {
        const text = htmlBlockText((token as Tokens.HTML).text, this.restore);
        if (text !== "") this.push([{ text }], "text", ctx);
        break;
      }
      case "hr":
      case "space":
      case "def":
        break;
      default: {
        const other = token as Tokens.Generic;
        if (other.tokens) this.blocks(other.tokens, ctx);
        else if (typeof other.text === "string") this.push([{ text: xmlSafe(other.text) }], "text", ctx);
      }
    }
  }

  private list(list: Tokens.List, ctx: Context) {
    const level = Math.min(ctx.level + 1, MAX_LEVEL);
    const id = ++this.listCount;
    const inner: Context = { ...ctx, level };
    for (const { number, marker, head, rest } of listItems(list)) {
      const bullet: SlideParagraph["bullet"] = list.ordered ? { numbered: true, list: id, number } : { numbered: false };
      // An item without text of its own keeps its bullet: a space stands in, as a paragraph needs a run.
      this.push([...marker, ...(head ? inlineRuns(head, this.restore) : [{ text: " " }])], "text", inner, bullet);
      this.blocks(rest, inner);
    }
  }

  private push(runs: InlineRun[], kind: SlideParagraph["kind"], ctx: Context, bullet?: SlideParagraph["bullet"]) {
    const clean = withBreaksOnText(runs);
    if (clean.length === 0) return;
    this.out.push({ runs: clean, kind, level: Math.max(0, ctx.level), bullet });
  }
}

/**
 * Runs without empty ones: a hard break moves onto the run after it, and a break with
 * nothing after it is dropped. Empty runs are what makes PowerPoint ask for repair.
 */
function withBreaksOnText(runs: readonly InlineRun[]): InlineRun[] {
  const out: InlineRun[] = [];
  let pendingBreak = false;
  for (const run of runs) {
    if (run.text === "") {
      pendingBreak ||= run.break === true && out.length > 0;
      continue;
    }
    out.push({ ...run, break: pendingBreak || undefined });
    pendingBreak = false;
  }
  return out;
}

function charsPerLine(paragraph: SlideParagraph): number {
  return CHARS_PER_LINE - CHARS_PER_LEVEL * paragraph.level;
}

/** Estimated lines a paragraph takes once wrapped. */
function estimatedLines(paragraph: SlideParagraph): number {
  const width = charsPerLine(paragraph);
  let lines = 0;
  let current = 0;
  for (const run of paragraph.runs) {
    if (run.break) {
      lines += Math.max(1, Math.ceil(current / width));
      current = 0;
    }
    current += run.text.length;
  }
  return lines + Math.max(1, Math.ceil(current / width));
}

/** Deals paragraphs onto pages of at most `lines` estimated lines each. */
function paginate(paragraphs: readonly SlideParagraph[], lines: number): SlideParagraph[][] {
  const pages: SlideParagraph[][] = [[]];
  let used = 0;
  const place = (paragraph: SlideParagraph, size: number) => {
    if (used + size > lines && pages[pages.length - 1].length > 0) {
      pages.push([]);
      used = 0;
    }
    pages[pages.length - 1].push(paragraph);
    used += size;
  };
  for (let i = 0; i < paragraphs.length; i++) {
    const paragraph = paragraphs[i];
    const size = estimatedLines(paragraph);
    if (size > lines) {
      for (const piece of splitParagraph(paragraph, lines * charsPerLine(paragraph))) place(piece, estimatedLines(piece));
      continue;
    }
    // A heading goes with at least the first line of what follows it.
    const next = paragraphs[i + 1];
    if (paragraph.kind === "heading" && next && used + size + 1 > lines && pages[pages.length - 1].length > 0) {
      pages.push([]);
      used = 0;
    }
    place(paragraph, size);
  }
  return pages;
}

/**
 * A paragraph too long for one slide, cut at spaces into pieces of at most `maxChars`
 * (a word longer than that is cut where it must be). Only the first piece keeps the bullet.
 */
function splitParagraph(paragraph: SlideParagraph, maxChars: number): SlideParagraph[] {
  const pieces: SlideParagraph[] = [];
  let runs: InlineRun[] = [];
  let used = 0;
  const flush = () => {
    if (runs.length === 0) return;
    pieces.push({ ...paragraph, runs, bullet: pieces.length === 0 ? paragraph.bullet : undefined });
    runs = [];
    used = 0;
  };
  for (const run of paragraph.runs) {
    let first = true;
    for (const word of run.text.match(new RegExp(`[^ ]{1,${maxChars}} *| +`, "g")) ?? []) {
      if (used + word.length > maxChars) flush();
      const last = runs[runs.length - 1];
      // Words of one run stay one run unless a piece boundary fell between them.
      if (!first && last) last.text += word;
      else runs.push({ ...run, text: word, break: first && runs.length > 0 ? run.break : undefined });
      used += word.length;
      first = false;
    }
  }
  flush();
  return pieces;
}
