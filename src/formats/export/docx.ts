/**
 * The docx export (SPEC §6): the selected cards, in tree order, as one Word document in
 * which Markdown becomes real Word structure — heading styles, bold/italic/strike runs,
 * code in a monospace style, numbered and bulleted lists with nesting, indented block
 * quotes, hyperlinks and tables — built from marked's tokens with the docx library, so
 * it opens without repair in Word and LibreOffice. Card depth is not shown: as in
 * Gingko, a card's own headings carry the document's structure.
 */
import {
  AlignmentType,
  Bookmark,
  Document,
  ExternalHyperlink,
  FootnoteReferenceRun,
  HeadingLevel,
  InternalHyperlink,
  Packer,
  Paragraph,
  Table,
  TableCell,
  TableRow,
  TextRun,
  WidthType,
  type ParagraphChild,
} from "docx";
import type { Token, Tokens } from "marked";
import { officeMath } from "./docx-math.js";
import { documentFootnotes, FootnoteNumbers, footnotesAsWritten, splitFootnotes } from "./footnotes.js";
import { docxNumbering, docxStyles, listReference, STYLE } from "./docx-styles.js";
import { linearMath } from "./math-tree.js";
import {
  documentProperties,
  headingTokens,
  htmlBlockText,
  inlineMarkdown,
  inlineRuns,
  inlineText,
  lexCards,
  listItems,
  restoreMarked,
  Slugger,
  splitMath,
  xmlSafe,
  type InlineRun,
  type LexedCard,
} from "./markdown-inline.js";
import type { ExportInput } from "./select.js";

/** Twips of text width on the library's default page (A4, 1-inch margins): tables fill it. */
const TEXT_WIDTH = 11906 - 2 * 1440;
/** Word's own step for list and quote indents: half an inch. */
const INDENT_STEP = 720;
const MAX_LIST_LEVEL = 8;

const HEADINGS = [
  HeadingLevel.HEADING_1,
  HeadingLevel.HEADING_2,
  HeadingLevel.HEADING_3,
  HeadingLevel.HEADING_4,
  HeadingLevel.HEADING_5,
  HeadingLevel.HEADING_6,
];

type Block = Paragraph | Table;

/** Where a block sits: inside how many lists and quotes. */
interface Context {
  /** Level of the innermost list item, -1 outside lists. */
  listLevel: number;
  quoteDepth: number;
  restore: (text: string) => string;
}

/**
 * The document as a .docx file. Throws only what the docx library throws on a bug of ours.
 */
export async function docxExporter({ tree, selected }: ExportInput): Promise<Buffer> {
  const lexed = lexCards(
    selected.map(({ card }) => card.content),
    tree.latex === true,
  );
  const notes = new FootnoteNumbers(documentFootnotes(lexed));
  const writer = new BlockWriter(headingBookmarks(lexed), notes);
  // Math comes through the runs between marks, and becomes Word equations (docx-math.ts).
  for (const { tokens, restore } of lexed) writer.blocks(tokens, { listLevel: -1, quoteDepth: 0, restore: restoreMarked(restore) });
  // Front matter (the first card's) becomes the document's properties, as pandoc does.
  const properties = documentProperties(lexed);
  const safe = (text: string | undefined) => (text === undefined ? undefined : xmlSafe(text));
  const document = new Document({
    title: xmlSafe(properties.title ?? tree.name),
    creator: safe(properties.author) ?? "Cardtree",
    lastModifiedBy: "Cardtree",
    subject: safe(properties.subject),
    description: safe(properties.description),
    keywords: safe(properties.keywords),
    styles: docxStyles,
    numbering: docxNumbering,
    // Numbered as their references were written; a note's own references stay as written.
    footnotes: Object.fromEntries(
      notes.order.map(({ number, text }) => [
        number,
        { children: [new Paragraph({ children: writer.runs(inlineRuns(inlineMarkdown(text)).map((run) => ({ ...run, text: footnotesAsWritten(run.text) }))) })] },
      ]),
    ),
    // A body needs a paragraph for Word to count it as a document.
    sections: [{ children: writer.out.length > 0 ? writer.out : [new Paragraph({})] }],
  });
  return Packer.toBuffer(document);
}

/**
 * Every heading's Word bookmark, so `[see](#installing)` can be an internal hyperlink: ids as
 * the html export makes them (unique across the document), names as Word wants them (a
 * letter first, letters, digits and `_`, at most 40 characters).
 */
interface Bookmarks {
  byHeading: Map<Tokens.Heading, string>;
  bySlug: Map<string, string>;
}

function headingBookmarks(lexed: readonly LexedCard[]): Bookmarks {
  const slugs = new Slugger();
  const bookmarks: Bookmarks = { byHeading: new Map(), bySlug: new Map() };
  for (const { tokens, restore } of lexed) {
    for (const heading of headingTokens(tokens)) {
      const slug = slugs.slug(inlineText(heading.tokens, restore));
      const name = `h${bookmarks.byHeading.size + 1}_${slug.replace(/[^A-Za-z0-9_]/g, "_")}`.slice(0, 40);
      bookmarks.byHeading.set(heading, name);
      bookmarks.bySlug.set(slug, name);
    }
  }
  return bookmarks;
}

class BlockWriter {
  readonly out: Block[] = [];
  /** Each Markdown list is its own Word list, so its numbering starts afresh. */
  private listInstance = 0;

  constructor(
    private readonly bookmarks: Bookmarks,
    private readonly notes: FootnoteNumbers,
  ) {}

  blocks(tokens: readonly Token[], ctx: Context) {
    for (const token of tokens) this.block(token, ctx);
  }

  private block(token: Token, ctx: Context) {
    switch (token.type) {
      case "heading": {
        const heading = token as Tokens.Heading;
        const children = this.runs(inlineRuns(heading.tokens, ctx.restore));
        const bookmark = this.bookmarks.byHeading.get(heading);
        this.out.push(
          new Paragraph({
            heading: HEADINGS[Math.min(heading.depth, 6) - 1],
            children: bookmark ? [new Bookmark({ id: bookmark, children })] : children,
          }),
        );
        break;
      }
      case "paragraph":
        this.paragraph(inlineRuns((token as Tokens.Paragraph).tokens, ctx.restore), ctx);
        break;
      case "text":
        this.paragraph(inlineRuns(token.tokens ?? [token], ctx.restore), ctx);
        break;
      case "list":
        this.list(token as Tokens.List, ctx);
        break;
      case "blockquote":
        this.blocks((token as Tokens.Blockquote).tokens, { ...ctx, quoteDepth: ctx.quoteDepth + 1 });
        break;
      case "code":
        this.code(ctx.restore(token.text), ctx);
        break;
      case "table":
        this.out.push(table(token as Tokens.Table, ctx, (runs) => this.runs(runs)));
        break;
      case "hr":
        this.out.push(new Paragraph({ thematicBreak: true }));
        break;
      case "html": {
        // Raw HTML cannot become Word structure; its text is kept, its tags dropped.
        const text = htmlBlockText(token.text, ctx.restore);
        if (text !== "") this.paragraph([{ text }], ctx);
        break;
      }
      case "space":
      case "def":
        break;
      default: {
        const other = token as Tokens.Generic;
        if (other.tokens) this.blocks(other.tokens, ctx);
        else if (typeof other.text === "string") this.paragraph([{ text: xmlSafe(other.text) }], ctx);
      }
    }
  }

  /**
   * Runs as Word runs; consecutive runs of one link share one hyperlink: external for a URL
   * (relative ones open beside the document), internal for a heading of this document.
   * A link to a heading the export does not hold keeps its text without a link.
   */
  runs(runs: readonly InlineRun[]): ParagraphChild[] {
    const out: ParagraphChild[] = [];
    for (let i = 0; i < runs.length; ) {
      const { link, anchor } = runs[i];
      const bookmark = anchor === undefined ? undefined : this.bookmarks.bySlug.get(anchor);
      if (link === undefined && bookmark === undefined) {
        out.push(...this.textMathAndNotes(runs[i++]));
        continue;
      }
      const children: TextRun[] = [];
      // A hyperlink holds runs only: math in a link's text is written in its linear form.
      while (i < runs.length && runs[i].link === link && runs[i].anchor === anchor) {
        const run = runs[i++];
        const text = splitMath(run.text).map((part) => (part.math ? linearMath(part.text) : part.text)).join("");
        children.push(textRun({ ...run, text: footnotesAsWritten(text) }));
      }
      out.push(link !== undefined ? new ExternalHyperlink({ link, children }) : new InternalHyperlink({ anchor: bookmark!, children }));
    }
    return out;
  }

  /** A run's text, equations and footnote references (a reference to no note stays as written). */
  private textMathAndNotes(run: InlineRun): ParagraphChild[] {
    return mathParts(run).flatMap((part) => {
      if ("equation" in part) return [part.equation];
      const { text } = part;
      return splitFootnotes(text.text).map((piece, i) => {
        const number = piece.label === undefined ? undefined : this.notes.number(piece.label);
        if (number !== undefined) return new FootnoteReferenceRun(number);
        return textRun({ ...text, text: piece.text, break: i === 0 ? text.break : undefined });
      });
    });
  }

  private paragraph(runs: InlineRun[], ctx: Context) {
    // A paragraph of display math alone is centred, as a typeset equation is.
    const display = runs.length === 1 && /^\uE002\$\$[^]*\uE003$/.test(runs[0].text);
    this.out.push(
      new Paragraph({
        alignment: display ? AlignmentType.CENTER : undefined,
        style: ctx.quoteDepth > 0 ? STYLE.quote : undefined,
        indent: blockIndent(ctx),
        children: this.runs(runs),
      }),
    );
  }

  private code(text: string, ctx: Context) {
    // One paragraph per line: the style's shading then reads as one block, and Word keeps
    // leading spaces of each line.
    const lines = xmlSafe(text).replace(/\t/g, "    ").split("\n");
    lines.forEach((line, i) => {
      // The block's last line keeps the space a paragraph has after it.
      const spacing = i === lines.length - 1 ? { after: 120 } : undefined;
      this.out.push(new Paragraph({ style: STYLE.codeBlock, indent: blockIndent(ctx), spacing, children: [new TextRun(line)] }));
    });
  }

  private list(list: Tokens.List, ctx: Context) {
    const level = Math.min(ctx.listLevel + 1, MAX_LIST_LEVEL);
    const numbering = {
      reference: listReference(list.ordered, typeof list.start === "number" ? list.start : 1),
      level,
      instance: ++this.listInstance,
    };
    const inner: Context = { ...ctx, listLevel: level };
    for (const { marker, head, rest } of listItems(list)) {
      // An item that opens with a code block or a nested list still gets its number.
      this.out.push(new Paragraph({ numbering, children: this.runs(head ? [...marker, ...inlineRuns(head, ctx.restore)] : marker) }));
      this.blocks(rest, inner);
    }
  }
}

/** Left indent for a block inside quotes or under a list item, in line with its text. */
function blockIndent(ctx: Context): { left: number } | undefined {
  const steps = ctx.quoteDepth + ctx.listLevel + 1;
  return steps > 0 ? { left: steps * INDENT_STEP } : undefined;
}

function table(token: Tokens.Table, ctx: Context, runs: (runs: InlineRun[]) => ParagraphChild[]): Table {
  const columns = Math.max(1, token.header.length);
  const columnWidth = Math.floor(TEXT_WIDTH / columns);
  const row = (cells: Tokens.TableCell[], header: boolean) =>
    new TableRow({
      tableHeader: header,
      children: cells.map(
        (cell) =>
          new TableCell({
            width: { size: columnWidth, type: WidthType.DXA },
            children: [
              new Paragraph({
                alignment: ALIGN[cell.align ?? "left"],
                children: runs(inlineRuns(cell.tokens, ctx.restore).map((run) => (header ? { ...run, bold: true } : run))),
              }),
            ],
          }),
      ),
    });
  return new Table({
    width: { size: columnWidth * columns, type: WidthType.DXA },
    columnWidths: Array.from({ length: columns }, () => columnWidth),
    rows: [row(token.header, true), ...token.rows.map((cells) => row(cells, false))],
  });
}

const ALIGN = { left: AlignmentType.LEFT, center: AlignmentType.CENTER, right: AlignmentType.RIGHT } as const;


/**
 * A run cut at its math: each span a Word equation, or its source as text when Temml cannot
 * read it; the text parts as runs of their own.
 */
function mathParts(run: InlineRun): ({ equation: ParagraphChild } | { text: InlineRun })[] {
  return splitMath(run.text).map((part, i) => {
    const math = part.math ? officeMath(part.text) : undefined;
    return math ? { equation: math.math } : { text: { ...run, text: part.text, break: i === 0 ? run.break : undefined } };
  });
}

function textRun(run: InlineRun): TextRun {
  return new TextRun({
    text: run.text,
    bold: run.bold,
    italics: run.italic,
    strike: run.strike,
    style: run.code ? STYLE.inlineCode : run.link || run.anchor ? STYLE.hyperlink : undefined,
    break: run.break ? 1 : undefined,
  });
}
