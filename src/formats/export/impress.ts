/**
 * The impress export (SPEC §6): a 16:9 presentation (.pptx, which LibreOffice Impress and
 * PowerPoint both open) built with pptxgenjs: a title slide with the tree name, then one
 * slide per card in tree order, titled with the card's first heading. A card too long for
 * one slide continues on the next ones ("(continued)" after the title). An empty card
 * still gets its (blank) slide: SPEC says one slide per card, and a presenter may use an
 * empty card as a deliberate pause.
 */
import PptxGenJS from "pptxgenjs";
import { ValidationError } from "../../domain/errors.js";
import { cardSlides, type CardSlides, type SlideParagraph } from "./impress-layout.js";
import { lexCards, xmlSafe } from "./markdown-inline.js";
import { finishPresentation } from "./pptx-package.js";
import type { ExportInput } from "./select.js";

/**
 * The zip format without ZIP64, which pptxgenjs cannot write, holds 65,535 parts, and each
 * slide takes four (slide, notes, and their relationships), plus a few for the deck.
 */
export const MAX_SLIDES = 16_000;

const MONOSPACE = "Courier New";
const BODY_SIZE = 18;
const CODE_SIZE = 14;
const HEADING_SIZE = 20;
const QUOTE_COLOR = "595959";

/**
 * The presentation as a .pptx file.
 * @throws ValidationError when the selection would make more than MAX_SLIDES slides.
 */
export async function impressExporter({ tree, selected }: ExportInput): Promise<Buffer> {
  const cards = lexCards(
    selected.map(({ card }) => card.content),
    tree.latex === true,
  ).map(cardSlides);
  const slideCount = 1 + cards.reduce((sum, card) => sum + card.pages.length, 0);
  if (slideCount > MAX_SLIDES) {
    throw new ValidationError(
      `This export would make ${slideCount} slides, more than the ${MAX_SLIDES} a presentation may have here; narrow it with cardId or column.`,
      [{ path: "format", message: `a presentation holds at most ${MAX_SLIDES} slides` }],
    );
  }
  // An empty text box is what makes PowerPoint repair a file, so the title slide always says something.
  const name = xmlSafe(tree.name).trim() || "Untitled";
  const deck = new PptxGenJS();
  deck.layout = "LAYOUT_16x9";
  deck.title = name;
  deck.author = "Cardtree";
  deck.company = "Cardtree";
  deck.subject = name;
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
  for (const card of cards) addCardSlides(deck, card);
  const stored = (await deck.write({ outputType: "nodebuffer" })) as Buffer;
  return finishPresentation(stored);
}

function addCardSlides(deck: PptxGenJS, { title, pages }: CardSlides) {
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
    // No text box at all for an empty page: an empty one is what makes PowerPoint repair.
    if (page.length === 0) return;
    slide.addText(slideText(page), {
      x: 0.5,
      y: title === undefined ? 0.4 : 1.25,
      w: 9,
      h: title === undefined ? 4.9 : 4.1,
      fontSize: BODY_SIZE,
      valign: "top",
      paraSpaceAfter: 6,
    });
  });
}

/** pptxgenjs's run list for one slide body: a paragraph ends with `breakLine`. */
function slideText(page: readonly SlideParagraph[]): PptxGenJS.TextProps[] {
  // A numbered list continued from the slide before starts at its item's own number.
  const listStarts = new Map<number, number>();
  const out: PptxGenJS.TextProps[] = [];
  page.forEach((paragraph, p) => {
    const bullet = paragraph.bullet;
    let bulletOption: PptxGenJS.TextPropsOptions["bullet"];
    if (bullet?.numbered) {
      if (!listStarts.has(bullet.list)) listStarts.set(bullet.list, bullet.number);
      bulletOption = { type: "number", numberStartAt: listStarts.get(bullet.list) };
    } else if (bullet) {
      bulletOption = true;
    }
    paragraph.runs.forEach((run, r) => {
      const first = r === 0;
      out.push({
        text: run.text,
        options: {
          bold: run.bold || undefined,
          italic: run.italic || paragraph.kind === "quote" || undefined,
          strike: run.strike ? "sngStrike" : undefined,
          fontFace: run.code ? MONOSPACE : undefined,
          fontSize: paragraph.kind === "code" ? CODE_SIZE : paragraph.kind === "heading" ? HEADING_SIZE : undefined,
          color: paragraph.kind === "quote" ? QUOTE_COLOR : undefined,
          hyperlink: run.link ? { url: run.link } : undefined,
          softBreakBefore: (!first && run.break) || undefined,
          // Paragraph properties: pptxgenjs reads them from each run, pptx-package keeps the first.
          bullet: first ? bulletOption : undefined,
          indentLevel: first && paragraph.level > 0 ? paragraph.level : undefined,
          breakLine: r === paragraph.runs.length - 1 && p < page.length - 1 ? true : undefined,
        },
      });
    });
  });
  return out;
}
