/**
 * Markdown seed → cards, by Gingko's import rules (SPEC §7). marked only finds where the
 * top-level blocks start and end; every card's content is cut from the source text itself,
 * so it reads exactly as written and is never re-rendered.
 *
 * Choices where SPEC §7 is silent:
 * - The seed is normalised first: a leading BOM is dropped, CRLF and lone CR become LF.
 * - A seed that is empty or only white space makes one empty card, like an empty one.
 * - `#Title` (1–6 hashes, then neither space nor `#`) is a heading wherever a top-level
 *   line is, a line that continues a paragraph included (`text\n##Sub`), as Gingko's lexer
 *   reads it. Inside list items and quotes it stays their text, and lines in code blocks are
 *   never headings. A setext underline below `#Title` does not turn it into a setext
 *   heading: `#Title` wins and the underline is read on its own (`---` is a rule).
 * - A block indented by at least one space after a list and a blank line belongs to the list
 *   (Gingko's lexer ends a list item only at a blank line followed by an unindented line),
 *   even where CommonMark would end the list; an indented heading still starts a section.
 * - Headings inside block quotes or list items are not section headings: the quote or list
 *   is one block.
 * - Every other top-level block is a block like any other, kept as written: paragraphs,
 *   lists, code, tables, quotes, rules (`---`), HTML blocks (sanitising is the renderer's
 *   job) and link reference definitions (so a definition split into its own card no longer
 *   serves links in other cards).
 * - A section's content keeps the source between its heading and its last block as is,
 *   including blank lines and indentation (an indented code block keeps its indent);
 *   only the white space after the last block is trimmed. Split-off blocks are trimmed the
 *   same way.
 * - Blocks before a first heading deeper than `#` form the depth-1 section, and that
 *   heading nests in it (sections nest by depth), so that section keeps its blocks.
 */
import { getDefaults, Lexer, type Token, type TokensList } from "marked";
import type { SeedNode } from "../shared/records.js";

/** `[start, end)` in the normalised source. */
interface Span {
  start: number;
  end: number;
}

type Piece = { kind: "heading"; depth: number; span: Span } | { kind: "block"; span: Span };

interface Section {
  depth: number;
  heading: Span | null;
  blocks: Span[];
  node: SeedNode;
  childNodes: SeedNode[];
}

const NO_SPACE_HEADING = /^ {0,3}(#{1,6})[^\s#]/;
const NO_SPACE_HEADING_LINE = /^ {0,3}#{1,6}[^\s#]/m;

/**
 * marked lexes the inside of every list item and quote, recursively: a list nested a few
 * thousand levels deep takes minutes and exhausts the heap, and deep quotes overflow the
 * stack. Only top-level block boundaries matter here, and those depend at most on the
 * blocks one or two levels down (a quote's lazy continuation looks at its last inner
 * block), so nesting beyond this depth is left unlexed.
 */
const MAX_LEXED_NESTING = 8;

class TopLevelBlockLexer extends Lexer {
  #nesting = 0;

  override blockTokens(src: string, tokens?: Token[], lastParagraphClipped?: boolean): Token[];
  override blockTokens(src: string, tokens?: TokensList, lastParagraphClipped?: boolean): TokensList;
  override blockTokens(src: string, tokens: Token[] = [], lastParagraphClipped?: boolean): Token[] {
    if (this.#nesting >= MAX_LEXED_NESTING) return tokens;
    this.#nesting++;
    try {
      return super.blockTokens(src, tokens, lastParagraphClipped);
    } finally {
      this.#nesting--;
    }
  }
}

/** Top-level block tokens only: inline lexing is never run, nothing here needs it. */
function lexBlocks(markdown: string): Token[] {
  // Fresh defaults, so options that another module sets with marked.use() cannot leak in.
  return new TopLevelBlockLexer(getDefaults()).blockTokens(markdown, []);
}

function normaliseSeedText(text: string): string {
  return text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
}

/**
 * Splits the source into headings and blocks, in source order. A token's `raw` is exactly
 * the source it consumed, so offsets are running sums of `raw` lengths.
 */
function headingsAndBlocks(source: string): Piece[] {
  const pieces: Piece[] = [];
  // Frames of tokens still to read; a paragraph holding `#Title` lines pushes a frame for its parts.
  const frames: { tokens: Token[]; next: number; offset: number }[] = [
    { tokens: lexBlocks(source), next: 0, offset: 0 },
  ];
  // The last piece is a list, perhaps with indented blocks already taken into it.
  let afterList = false;
  while (frames.length > 0) {
    const frame = frames[frames.length - 1];
    if (frame.next === frame.tokens.length) {
      frames.pop();
      continue;
    }
    const token = frame.tokens[frame.next++];
    const start = frame.offset;
    frame.offset += token.raw.length;
    if (token.type === "space") continue;
    const last = pieces[pieces.length - 1];
    if (afterList && last?.kind === "block" && token.type !== "heading" && /^[ \t]/.test(token.raw)) {
      // Gingko's lexer ends a list item only at a blank line followed by an unindented line:
      // an indented block after a blank line stays in the list's card.
      last.span.end = frame.offset;
      continue;
    }
    afterList = false;
    if (token.type === GINGKO_HEADING) {
      const { depth } = token as GingkoHeading;
      pieces.push({ kind: "heading", depth, span: { start, end: start + token.raw.replace(/\n$/, "").length } });
    } else if ((token.type === "paragraph" || token.type === "heading") && NO_SPACE_HEADING_LINE.test(token.raw)) {
      frames.push({ tokens: splitAtNoSpaceHeadings(token.raw), next: 0, offset: start });
    } else if (token.type === "heading") {
      pieces.push({ kind: "heading", depth: token.depth, span: { start, end: frame.offset } });
    } else {
      pieces.push({ kind: "block", span: { start, end: frame.offset } });
      afterList = token.type === "list";
    }
  }
  return pieces;
}

/** A `#Title` line found inside a paragraph, as a token of its own (never produced by marked). */
const GINGKO_HEADING = "gingkoHeading";
interface GingkoHeading {
  type: typeof GINGKO_HEADING;
  raw: string;
  depth: number;
}

/**
 * A paragraph (or setext heading) holding `#Title` lines, as the tokens Gingko reads in it:
 * the lines before the first `#Title` stay one paragraph, each `#Title` line is a heading
 * (it interrupts a paragraph, SPEC §7 rule 1), and the text between and after them is lexed
 * again, as what follows a heading. Each part is read once, so a long run stays linear.
 */
function splitAtNoSpaceHeadings(raw: string): Token[] {
  const tokens: Token[] = [];
  let text = "";
  let afterHeading = false;
  const flush = () => {
    if (text === "") return;
    if (afterHeading) tokens.push(...lexBlocks(text));
    else tokens.push({ type: "paragraph", raw: text, text, tokens: [] });
    text = "";
  };
  for (const line of raw.match(/[^\n]*\n|[^\n]+$/g) ?? []) {
    const match = NO_SPACE_HEADING.exec(line);
    if (!match) {
      text += line;
      continue;
    }
    flush();
    tokens.push({ type: GINGKO_HEADING, raw: line, depth: match[1].length } as GingkoHeading as unknown as Token);
    afterHeading = true;
  }
  flush();
  return tokens;
}

/**
 * Turns a Markdown seed into the tree of cards to create, by SPEC §7. Never throws: any
 * text is some Markdown. Walks are iterative; heading depth is at most 6 anyway.
 */
export function markdownToCards(text: string): SeedNode[] {
  const source = normaliseSeedText(text);
  const roots: SeedNode[] = [];
  const sections: Section[] = [];
  // The sections a new heading may nest in, shallowest first.
  const open: Section[] = [];

  const addSection = (depth: number, heading: Span | null): Section => {
    const section: Section = { depth, heading, blocks: [], node: { content: "" }, childNodes: [] };
    const parent = open[open.length - 1];
    (parent ? parent.childNodes : roots).push(section.node);
    open.push(section);
    sections.push(section);
    return section;
  };
  const openSection = (depth: number, heading: Span | null): Section => {
    while (open.length > 0 && open[open.length - 1].depth >= depth) open.pop();
    // A jump of more than one level gets an empty card for each missing level.
    for (let missing = (open[open.length - 1]?.depth ?? 0) + 1; missing < depth; missing++) {
      addSection(missing, null);
    }
    return addSection(depth, heading);
  };

  let current: Section | null = null;
  for (const piece of headingsAndBlocks(source)) {
    if (piece.kind === "heading") current = openSection(piece.depth, piece.span);
    else (current ??= openSection(1, null)).blocks.push(piece.span);
  }
  if (roots.length === 0) return [{ content: "" }];

  const written = (start: number, end: number) => source.slice(start, end).trimEnd();
  for (const section of sections) {
    const { heading, blocks, node } = section;
    if (section.childNodes.length > 0) {
      node.children = section.childNodes;
    } else if (blocks.length >= 2) {
      node.content = heading ? written(heading.start, heading.end) : "";
      node.children = blocks.map((block) => ({ content: written(block.start, block.end) }));
      continue;
    }
    const first = heading ?? blocks[0];
    const last = blocks[blocks.length - 1] ?? heading;
    if (first && last) node.content = written(first.start, last.end);
  }
  return roots;
}
