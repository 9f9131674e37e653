/**
 * Markdown seed → cards, by Gingko's import rules (SPEC §7). marked only finds where the
 * top-level blocks start and end; every card's content is cut from the source text itself,
 * so it reads exactly as written and is never re-rendered.
 *
 * Choices where SPEC §7 is silent:
 * - The seed is normalised first: a leading BOM is dropped, CRLF and lone CR become LF.
 * - A seed that is empty or only white space makes one empty card, like an empty one.
 * - `#Title` (1–6 hashes, then neither space nor `#`) is a heading only where a block may
 *   start: at the start of the seed, after a blank line, a heading or another block. A
 *   `#tag` on a line that continues a paragraph, list item or quote stays text, and lines in
 *   code blocks are never headings. A setext underline below `#Title` does not turn it into
 *   a setext heading: `#Title` wins and the underline is read on its own (`---` is a rule).
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
import type { SeedNode } from "../domain/records.js";

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
  // Frames of tokens still to read; a `#Title` paragraph pushes a frame for its rest.
  const frames: { tokens: Token[]; next: number; offset: number }[] = [
    { tokens: lexBlocks(source), next: 0, offset: 0 },
  ];
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
    if ((token.type === "paragraph" || token.type === "heading") && NO_SPACE_HEADING.test(token.raw)) {
      const restStart = takeNoSpaceHeadings(token.raw, start, pieces);
      const rest = source.slice(restStart, frame.offset);
      if (rest.trim() !== "") frames.push({ tokens: lexBlocks(rest), next: 0, offset: restStart });
    } else if (token.type === "heading") {
      pieces.push({ kind: "heading", depth: token.depth, span: { start, end: frame.offset } });
    } else {
      pieces.push({ kind: "block", span: { start, end: frame.offset } });
    }
  }
  return pieces;
}

/**
 * Records each leading `#Title` line of a paragraph as a heading; returns where the rest
 * of the paragraph starts. All leading lines are taken at once (each follows a heading, so
 * each starts a block) to keep a long run of them linear.
 */
function takeNoSpaceHeadings(raw: string, start: number, pieces: Piece[]): number {
  let lineStart = 0;
  while (lineStart < raw.length) {
    const newline = raw.indexOf("\n", lineStart);
    const lineEnd = newline === -1 ? raw.length : newline;
    const match = NO_SPACE_HEADING.exec(raw.slice(lineStart, lineEnd));
    if (!match) break;
    pieces.push({ kind: "heading", depth: match[1].length, span: { start: start + lineStart, end: start + lineEnd } });
    lineStart = lineEnd + 1;
  }
  return start + Math.min(lineStart, raw.length);
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
