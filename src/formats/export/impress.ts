/**
 * The impress export (SPEC §6): a 16:9 presentation (.pptx, which LibreOffice Impress and
 * PowerPoint both open) built with pptxgenjs: a title slide with the tree name, then one
 * slide per card in tree order, titled with the card's first heading. A card too long for
 * one slide continues on the next ones ("(continued)" after the title). A card with nothing
 * to show (empty, or markup without text) gets no slide: a blank slide reads as a mistake.
 */
import PptxGenJS from "pptxgenjs";
import { ValidationError } from "../../shared/errors.js";
import {
  blockWidth,
  cardSlides,
  codeHeight,
  GEOMETRY,
  paragraphHeight,
  tableRowHeight,
  type CardSlides,
  type SlideBlock,
  type SlideCode,
  type SlideParagraph,
  type SlideTable,
} from "./impress-layout.js";
import { documentFootnotes } from "./footnotes.js";
import { documentProperties, headingTokens, inlineText, lexCards, Slugger, xmlSafe, type InlineRun, type LexedCard } from "./markdown-inline.js";
import { finishPresentation } from "./pptx-package.js";
import type { ExportInput } from "./select.js";

/**
 * The zip format without ZIP64, which pptxgenjs cannot write, holds 65,535 parts, and each
 * slide takes four (slide, notes, and their relationships), plus a few for the deck.
 */
export const MAX_SLIDES = 16_000;

const MONOSPACE = "Courier New";
const QUOTE_COLOR = "595959";
const CODE_FILL = "F2F2F2";
const HEADER_FILL = "E7E6E6";

/**
 * The presentation as a .pptx file.
 * @throws ValidationError when the selection would make more than MAX_SLIDES slides.
 */
export async function impressExporter({ tree, selected }: ExportInput): Promise<Buffer> {
  const lexed = lexCards(
    selected.map(({ card }) => card.content),
    tree.latex === true,
  );
  const footnotes = documentFootnotes(lexed);
  const cards = lexed.map((card) => cardSlides(card, footnotes));
  // Front matter (the first card's) names the deck and its title slide, as pandoc does.
  const properties = documentProperties(lexed);
  const slideCount = 1 + cards.reduce((sum, card) => sum + (isBlank(card) ? 0 : card.pages.length), 0);
  if (slideCount > MAX_SLIDES) {
    throw new ValidationError(
      `This export would make ${slideCount} slides, more than the ${MAX_SLIDES} a presentation may have here; narrow it with cardId or column.`,
      [{ path: "format", message: `a presentation holds at most ${MAX_SLIDES} slides` }],
    );
  }
  // An empty text box is what makes PowerPoint repair a file, so the title slide always says something.
  const name = xmlSafe(properties.title ?? tree.name).trim() || xmlSafe(tree.name).trim() || "Untitled";
  const deck = new PptxGenJS();
  deck.layout = "LAYOUT_16x9";
  deck.title = name;
  deck.author = xmlSafe(properties.author ?? "Cardtree");
  deck.company = "Cardtree";
  deck.subject = xmlSafe(properties.subject ?? properties.description ?? name);
  deck.addSlide().addText(name, {
    x: 0.5,
    y: 1.3,
    w: 9,
    h: 2.5,
    fontSize: name.length <= 40 ? 40 : name.length <= 80 ? 32 : 24,
    bold: true,
    align: "center",
    valign: "middle",
  });
  const anchors = headingSlides(lexed, cards);
  for (const card of cards) addCardSlides(deck, card, anchors);
  const stored = (await deck.write({ outputType: "nodebuffer" })) as Buffer;
  return finishPresentation(stored);
}

const inches = (points: number) => points / 72;

/** A card with nothing to show gets no slide (see addCardSlides). */
const isBlank = ({ title, pages }: CardSlides) => title === undefined && pages.every((page) => page.length === 0);

/**
 * The slide each heading id (as the html export makes them) lands on, so `[see](#setup)`
 * jumps there: the first slide of the heading's card (the title slide is slide 1).
 */
function headingSlides(lexed: readonly LexedCard[], cards: readonly CardSlides[]): Map<string, number> {
  const slugs = new Slugger();
  const anchors = new Map<string, number>();
  let slide = 2;
  lexed.forEach(({ tokens, restore }, i) => {
    for (const heading of headingTokens(tokens)) {
      const slug = slugs.slug(inlineText(heading.tokens, restore));
      if (!anchors.has(slug)) anchors.set(slug, slide);
    }
    if (!isBlank(cards[i])) slide += cards[i].pages.length;
  });
  return anchors;
}

function addCardSlides(deck: PptxGenJS, card: CardSlides, anchors: ReadonlyMap<string, number>) {
  // No slide at all for a card with nothing to show (empty, or markup without text): a blank
  // slide reads as a mistake in a deck.
  if (isBlank(card)) return;
  const { title, pages } = card;
  pages.forEach((page, index) => {
    const slide = deck.addSlide();
    if (title !== undefined) {
      const text = index === 0 ? title : `${title} (continued)`;
      slide.addText(text, {
        x: 0.5,
        y: 0.25,
        w: 9,
        h: 0.9,
        fontSize: text.length <= 60 ? 28 : text.length <= 120 ? 22 : 18,
        bold: true,
        valign: "bottom",
      });
    }
    let y = title === undefined ? GEOMETRY.bodyTopUntitled : GEOMETRY.bodyTop;
    let previous: SlideBlock["type"] | undefined;
    // Consecutive paragraphs share one text box; code and tables are boxes of their own.
    for (let i = 0; i < page.length; ) {
      const block = page[i];
      if (previous !== undefined && (previous !== "paragraph" || block.type !== "paragraph")) y += GEOMETRY.blockGap;
      if (block.type === "paragraph") {
        const group: SlideParagraph[] = [];
        while (i < page.length && page[i].type === "paragraph") group.push(page[i++] as SlideParagraph);
        const height = group.reduce((sum, paragraph) => sum + paragraphHeight(paragraph), 2 * GEOMETRY.insetY);
        slide.addText(paragraphRuns(group, anchors), {
          x: inches(GEOMETRY.left),
          y: inches(y),
          w: inches(GEOMETRY.width),
          h: inches(height),
          fontSize: GEOMETRY.bodySize,
          valign: "top",
          margin: [GEOMETRY.insetY, GEOMETRY.insetX, GEOMETRY.insetY, GEOMETRY.insetX],
          paraSpaceAfter: GEOMETRY.paragraphSpace,
        });
        y += height;
      } else if (block.type === "code") {
        y += addCode(slide, block, y);
        i++;
      } else {
        y += addTable(slide, block, y, anchors);
        i++;
      }
      previous = block.type;
    }
  });
}

/** A code block in a shaded box of its own, one line per paragraph with no space between. */
function addCode(slide: PptxGenJS.Slide, code: SlideCode, y: number): number {
  const height = codeHeight(code);
  const indent = GEOMETRY.levelIndent * code.level;
  slide.addText(
    code.lines.map((line, i) => ({
      // A blank line of code still takes its line; an empty run would make PowerPoint repair.
      text: line === "" ? " " : line,
      options: { breakLine: i < code.lines.length - 1 ? true : undefined },
    })),
    {
      x: inches(GEOMETRY.left + indent),
      y: inches(y),
      w: inches(blockWidth(code.level)),
      h: inches(height),
      fontFace: MONOSPACE,
      fontSize: GEOMETRY.codeSize,
      valign: "top",
      fill: { color: CODE_FILL },
      margin: [GEOMETRY.insetY, GEOMETRY.insetX, GEOMETRY.insetY, GEOMETRY.insetX],
      paraSpaceAfter: 0,
      lineSpacingMultiple: 1,
    },
  );
  return height;
}

/** A real table: header row bold and shaded, columns aligned as the Markdown says. */
function addTable(slide: PptxGenJS.Slide, table: SlideTable, y: number, anchors: ReadonlyMap<string, number>): number {
  const columns = Math.max(1, table.header.length);
  const width = blockWidth(table.level);
  const cell = (runs: InlineRun[], column: number, header: boolean): PptxGenJS.TableCell => ({
    text: runs.length > 0 ? runs.map((run) => ({ text: run.text, options: runOptions(run, anchors, header) })) : " ",
    options: { align: table.align[column] ?? "left", bold: header || undefined, fill: header ? { color: HEADER_FILL } : undefined },
  });
  const rows = [table.header, ...table.rows];
  slide.addTable(
    rows.map((row, r) => Array.from({ length: columns }, (_, c) => cell(row[c] ?? [], c, r === 0))),
    {
      x: inches(GEOMETRY.left + GEOMETRY.levelIndent * table.level),
      y: inches(y),
      w: inches(width),
      colW: Array.from({ length: columns }, () => inches(width / columns)),
      rowH: rows.map((row) => inches(tableRowHeight(table, row))),
      fontSize: GEOMETRY.tableSize,
      margin: inches(GEOMETRY.tableCellMargin),
      border: { type: "solid", pt: 0.75, color: "BFBFBF" },
      valign: "top",
      autoPage: false,
    },
  );
  return rows.reduce((sum, row) => sum + tableRowHeight(table, row), 0);
}

function runOptions(run: InlineRun, anchors: ReadonlyMap<string, number>, bold = false): PptxGenJS.TextPropsOptions {
  const slide = run.anchor === undefined ? undefined : anchors.get(run.anchor);
  return {
    bold: bold || run.bold || undefined,
    italic: run.italic || undefined,
    strike: run.strike ? "sngStrike" : undefined,
    fontFace: run.code ? MONOSPACE : undefined,
    hyperlink: run.link ? { url: run.link } : slide !== undefined ? { slide } : undefined,
  };
}

/** pptxgenjs's run list for a group of paragraphs: a paragraph ends with `breakLine`. */
function paragraphRuns(group: readonly SlideParagraph[], anchors: ReadonlyMap<string, number>): PptxGenJS.TextProps[] {
  // Numbering counts within a text box: a list continued from the slide before (or from
  // before a code block) starts at its item's own number.
  const listStarts = new Map<number, number>();
  const out: PptxGenJS.TextProps[] = [];
  group.forEach((paragraph, p) => {
    const bullet = paragraph.bullet;
    let bulletOption: PptxGenJS.TextPropsOptions["bullet"];
    if (bullet?.kind === "number") {
      if (!listStarts.has(bullet.list)) listStarts.set(bullet.list, bullet.number);
      bulletOption = { type: "number", numberStartAt: listStarts.get(bullet.list) };
    } else if (bullet?.kind === "bullet") {
      bulletOption = true;
    } else if (bullet?.kind === "continuation") {
      // An invisible bullet: the paragraph gets the item's indent and no mark of its own.
      bulletOption = { characterCode: "00A0" };
    }
    paragraph.runs.forEach((run, r) => {
      const first = r === 0;
      out.push({
        text: run.text,
        options: {
          ...runOptions(run, anchors),
          italic: run.italic || paragraph.kind === "quote" || undefined,
          fontSize: paragraph.kind === "heading" ? GEOMETRY.headingSize : undefined,
          color: paragraph.kind === "quote" ? QUOTE_COLOR : undefined,
          softBreakBefore: (!first && run.break) || undefined,
          // Paragraph properties: pptxgenjs reads them from each run, pptx-package keeps the first.
          bullet: first ? bulletOption : undefined,
          indentLevel: first && paragraph.level > 0 ? paragraph.level : undefined,
          breakLine: r === paragraph.runs.length - 1 && p < group.length - 1 ? true : undefined,
        },
      });
    });
  });
  return out;
}
