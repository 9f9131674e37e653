/**
 * How one card becomes slides in the impress export: its first heading is the title, the
 * rest of its Markdown becomes paragraphs (bold, italic, code and links kept as runs;
 * list items as bullets or numbers with their nesting level), and the paragraphs are
 * dealt onto as many slides as they need, so a long card continues on the next slide
 * instead of running off the bottom. Slide text does not wrap itself into pages, so the
 * split works from an estimate of each block's height in points (wrapped lines at the
 * block's font size, paragraph spacing, box insets, gaps between blocks); it errs on the
 * side of spare room. Code blocks and tables are blocks of their own (a shaded box, a real
 * table), so the deck can measure and place them.
 */
import type { Token, Tokens } from "marked";
import { linearMath } from "./math-tree.js";
import { FootnoteNumbers, footnotesAsWritten, superscriptNumber } from "./footnotes.js";
import { htmlBlockText, inlineMarkdown, inlineRuns, inlineText, listItems, xmlSafe, type InlineRun, type LexedCard } from "./markdown-inline.js";

export interface SlideParagraph {
  type: "paragraph";
  runs: InlineRun[];
  kind: "text" | "heading" | "quote";
  /** Nesting level of list items, 0 at the left edge. */
  level: number;
  /**
   * List items: a bullet, or a number within the Markdown list `list`. `continuation`: a
   * later paragraph of an item, indented like the item's text, without a bullet of its own.
   */
  bullet?: { kind: "bullet" } | { kind: "number"; list: number; number: number } | { kind: "continuation" };
}

/** A code block: its own shaded box, lines as written. */
export interface SlideCode {
  type: "code";
  lines: string[];
  level: number;
}

/** A table: a real slide table; a long one continues on the next slide under its header again. */
export interface SlideTable {
  type: "table";
  header: InlineRun[][];
  rows: InlineRun[][][];
  align: ("left" | "center" | "right")[];
  level: number;
}

export type SlideBlock = SlideParagraph | SlideCode | SlideTable;

export interface CardSlides {
  /** The text of the card's first heading; absent when the card has none. */
  title?: string;
  /** The body of each slide, at least one (empty for a card with nothing else to show). */
  pages: SlideBlock[][];
}

/**
 * The geometry the deck is drawn with (impress.ts) and measured with (here), in points on a
 * 16:9 slide of 720 × 405. Text width is estimated at 0.55 em per character (Arial, Calibri
 * and Liberation Sans average about 0.5) and lines at 1.2 em, so estimates err on the side of
 * room to spare.
 */
export const GEOMETRY = {
  left: 36,
  width: 648,
  /** Body top and bottom with a title above it, and without. */
  bodyTop: 90,
  bodyTopUntitled: 29,
  bodyBottom: 380,
  /** Text box insets: PowerPoint's and LibreOffice's defaults, 0.1 inch left and right, 0.05 top and bottom. */
  insetX: 7.2,
  insetY: 3.6,
  bodySize: 18,
  headingSize: 20,
  codeSize: 14,
  tableSize: 14,
  paragraphSpace: 6,
  /** Space between blocks (a paragraph group, a code box, a table). */
  blockGap: 8,
  /** pptxgenjs indents each list level by its default bullet margin. */
  levelIndent: 27,
  tableCellMargin: 4,
} as const;

const EM_WIDTH = 0.55;
const MONO_EM_WIDTH = 0.6;
const LINE = 1.2;
const MAX_LEVEL = 8;

/** The slides of one card, from its tokens (`lexCards`). Throws nothing. */
export function cardSlides({ tokens, restore: restoreSource }: LexedCard, footnotes: ReadonlyMap<string, string> = new Map()): CardSlides {
  // Slides hold text: math as its Unicode linear form (x² + yᵢ), see math-tree.ts.
  const restore = (text: string) => restoreSource(text, (span, inUrl) => (inUrl ? span : linearMath(span)));
  const titleIndex = tokens.findIndex((token) => token.type === "heading");
  const title = titleIndex >= 0 ? footnotesAsWritten(inlineText((tokens[titleIndex] as Tokens.Heading).tokens, restore)).trim() : undefined;
  const body = new BlockWriter(restore);
  body.blocks(
    tokens.filter((_, i) => i !== titleIndex),
    { level: -1, quote: false },
  );
  addFootnotes(body.out, new FootnoteNumbers(footnotes));
  const hasTitle = title !== undefined && title !== "";
  const room = GEOMETRY.bodyBottom - (hasTitle ? GEOMETRY.bodyTop : GEOMETRY.bodyTopUntitled);
  return { title: hasTitle ? title : undefined, pages: paginate(body.out, room) };
}

/**
 * A card's footnotes on its slides: each reference a superscript number, each note a
 * paragraph at the end of the card ("¹ the note"), numbered within the card.
 */
function addFootnotes(blocks: SlideBlock[], notes: FootnoteNumbers) {
  const numbered = (runs: InlineRun[]) =>
    runs.map((run) => ({
      ...run,
      text: run.text.replace(/\uE004([^\uE005]*)\uE005/g, (_, label: string) => {
        const number = notes.number(label);
        return number === undefined ? `[^${label}]` : superscriptNumber(number);
      }),
    }));
  for (const block of blocks) {
    if (block.type === "paragraph") block.runs = numbered(block.runs);
    else if (block.type === "table") {
      block.header = block.header.map(numbered);
      block.rows = block.rows.map((row) => row.map(numbered));
    }
  }
  for (const { number, text } of notes.order) {
    const runs = inlineRuns(inlineMarkdown(text)).map((run) => ({ ...run, text: footnotesAsWritten(run.text) }));
    blocks.push({ type: "paragraph", kind: "text", level: 0, runs: withBreaksOnText([{ text: `${superscriptNumber(number)} ` }, ...runs]) });
  }
}

interface Context {
  /** Level of the innermost list item, -1 outside lists. */
  level: number;
  quote: boolean;
  /** Inside a list item, after its first line: paragraphs continue the item. */
  continuation?: boolean;
}

class BlockWriter {
  readonly out: SlideBlock[] = [];
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
      case "code": {
        const lines = xmlSafe(this.restore((token as Tokens.Code).text)).replace(/\t/g, "    ").split("\n");
        this.out.push({ type: "code", lines, level: Math.max(0, ctx.level + (ctx.continuation ? 1 : 0)) });
        break;
      }
      case "table": {
        const table = token as Tokens.Table;
        const cells = (row: Tokens.TableCell[]) => row.map((cell) => withBreaksOnText(inlineRuns(cell.tokens, this.restore)));
        this.out.push({
          type: "table",
          header: cells(table.header),
          rows: table.rows.map(cells),
          align: table.align.map((align) => align ?? "left"),
          level: Math.max(0, ctx.level + (ctx.continuation ? 1 : 0)),
        });
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
    for (const { number, marker, head, rest } of listItems(list)) {
      const bullet: SlideParagraph["bullet"] = list.ordered ? { kind: "number", list: id, number } : { kind: "bullet" };
      // An item without text of its own keeps its bullet: a space stands in, as a paragraph needs a run.
      this.push([...marker, ...(head ? inlineRuns(head, this.restore) : [{ text: " " }])], "text", { ...ctx, level }, bullet);
      this.blocks(rest, { ...ctx, level, continuation: true });
    }
  }

  private push(runs: InlineRun[], kind: SlideParagraph["kind"], ctx: Context, bullet?: SlideParagraph["bullet"]) {
    const clean = withBreaksOnText(runs);
    if (clean.length === 0) return;
    const continued = bullet === undefined && ctx.continuation && ctx.level >= 0;
    this.out.push({
      type: "paragraph",
      runs: clean,
      kind,
      level: Math.max(0, ctx.level),
      bullet: continued ? { kind: "continuation" } : bullet,
    });
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

/** Points a paragraph's text may use per line, after its list indent. */
export function paragraphWidth(paragraph: SlideParagraph): number {
  const indent = paragraph.bullet ? GEOMETRY.levelIndent * (paragraph.level + 1) : 0;
  return GEOMETRY.width - 2 * GEOMETRY.insetX - indent;
}

function fontSize(paragraph: SlideParagraph): number {
  return paragraph.kind === "heading" ? GEOMETRY.headingSize : GEOMETRY.bodySize;
}

/** Lines `runs` take when wrapped at `chars` characters (hard breaks start a line). */
function wrappedLines(runs: readonly InlineRun[], chars: number): number {
  let lines = 0;
  let current = 0;
  for (const run of runs) {
    if (run.break) {
      lines += Math.max(1, Math.ceil(current / chars));
      current = 0;
    }
    current += run.text.length;
  }
  return lines + Math.max(1, Math.ceil(current / chars));
}

function charsPerLine(paragraph: SlideParagraph): number {
  return Math.max(8, Math.floor(paragraphWidth(paragraph) / (fontSize(paragraph) * EM_WIDTH)));
}

/** Estimated height of a paragraph inside a text box, its space after included. */
export function paragraphHeight(paragraph: SlideParagraph): number {
  return wrappedLines(paragraph.runs, charsPerLine(paragraph)) * fontSize(paragraph) * LINE + GEOMETRY.paragraphSpace;
}

/** Width of a code box or table at `level`. */
export function blockWidth(level: number): number {
  return GEOMETRY.width - GEOMETRY.levelIndent * level;
}

function codeLineHeight(): number {
  return GEOMETRY.codeSize * LINE;
}

function codeLines(code: SlideCode, line: string): number {
  const chars = Math.max(8, Math.floor((blockWidth(code.level) - 2 * GEOMETRY.insetX) / (GEOMETRY.codeSize * MONO_EM_WIDTH)));
  return Math.max(1, Math.ceil(line.length / chars));
}

/** Estimated height of a code box: its wrapped lines and its insets. */
export function codeHeight(code: SlideCode): number {
  const lines = code.lines.reduce((sum, line) => sum + codeLines(code, line), 0);
  return lines * codeLineHeight() + 2 * GEOMETRY.insetY;
}

/** Estimated height of one table row: its tallest cell. */
export function tableRowHeight(table: SlideTable, cells: readonly InlineRun[][]): number {
  const columnWidth = blockWidth(table.level) / Math.max(1, table.header.length);
  const chars = Math.max(4, Math.floor((columnWidth - 2 * GEOMETRY.tableCellMargin) / (GEOMETRY.tableSize * EM_WIDTH)));
  const lines = Math.max(1, ...cells.map((cell) => wrappedLines(cell, chars)));
  return lines * GEOMETRY.tableSize * LINE + 2 * GEOMETRY.tableCellMargin;
}

function blockHeight(block: SlideBlock): number {
  if (block.type === "paragraph") return paragraphHeight(block);
  if (block.type === "code") return codeHeight(block);
  return [block.header, ...block.rows].reduce((sum, row) => sum + tableRowHeight(block, row), 0);
}

/**
 * Deals blocks onto pages of at most `room` points each, the gaps between blocks of
 * different kinds counted. A block taller than a page is cut: a paragraph at spaces, code
 * between lines, a table between rows (its header repeated).
 */
function paginate(blocks: readonly SlideBlock[], room: number): SlideBlock[][] {
  const pages: SlideBlock[][] = [[]];
  let used = 0;
  const page = () => pages[pages.length - 1];
  const gapBefore = (block: SlideBlock) => {
    const last = page()[page().length - 1];
    return last && (last.type !== "paragraph" || block.type !== "paragraph") ? GEOMETRY.blockGap : 0;
  };
  const newPage = () => {
    if (page().length > 0) pages.push([]);
    used = 0;
  };
  const place = (block: SlideBlock) => {
    const height = blockHeight(block);
    if (used + gapBefore(block) + height > room) newPage();
    used += gapBefore(block) + height;
    page().push(block);
  };
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i];
    const height = blockHeight(block);
    if (height > room) {
      for (const piece of splitBlock(block, room)) place(piece);
      continue;
    }
    // A heading goes with at least the first line of what follows it.
    const next = blocks[i + 1];
    if (block.type === "paragraph" && block.kind === "heading" && next && used + gapBefore(block) + height + 30 > room) newPage();
    place(block);
  }
  return pages;
}

function splitBlock(block: SlideBlock, room: number): SlideBlock[] {
  if (block.type === "paragraph") {
    const lines = Math.max(1, Math.floor((room - GEOMETRY.paragraphSpace) / (fontSize(block) * LINE)));
    return splitParagraph(block, lines * charsPerLine(block));
  }
  if (block.type === "code") {
    const pieces: SlideCode[] = [];
    let lines: string[] = [];
    let height = 2 * GEOMETRY.insetY;
    for (const line of block.lines) {
      const size = codeLines(block, line) * codeLineHeight();
      if (lines.length > 0 && height + size > room) {
        pieces.push({ ...block, lines });
        lines = [];
        height = 2 * GEOMETRY.insetY;
      }
      lines.push(line);
      height += size;
    }
    if (lines.length > 0) pieces.push({ ...block, lines });
    return pieces;
  }
  const pieces: SlideTable[] = [];
  const headerHeight = tableRowHeight(block, block.header);
  let rows: InlineRun[][][] = [];
  let height = headerHeight;
  for (const row of block.rows) {
    const size = tableRowHeight(block, row);
    if (rows.length > 0 && height + size > room) {
      pieces.push({ ...block, rows });
      rows = [];
      height = headerHeight;
    }
    rows.push(row);
    height += size;
  }
  pieces.push({ ...block, rows });
  return pieces;
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
    const bullet = pieces.length === 0 || paragraph.bullet === undefined ? paragraph.bullet : { kind: "continuation" as const };
    pieces.push({ ...paragraph, runs, bullet });
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
