/**
 * The Word styles and list definitions of the docx export. Headings use Word's built-in
 * Heading1–6 (the docx library defines them), so a reader's navigation pane and table of
 * contents work; code, quotes and lists get definitions of their own here.
 */
import {
  AlignmentType,
  BorderStyle,
  LevelFormat,
  ShadingType,
  type ILevelsOptions,
  type INumberingOptions,
  type IStylesOptions,
} from "docx";

/** Installed with Word, LibreOffice (as a metric-compatible substitute) and macOS. */
const MONOSPACE = "Courier New";

export const STYLE = {
  codeBlock: "CodeBlock",
  inlineCode: "InlineCode",
  // Word's own style id for quotations, so Word lists it under its usual name.
  quote: "Quote",
  hyperlink: "Hyperlink",
} as const;

const CODE_SHADING = { type: ShadingType.CLEAR, color: "auto", fill: "F2F2F2" };

/** Sizes (half-points) and space before (twips) of Heading 1–6: a clear step per level, as Word's own. */
const HEADING_LOOK = [
  { size: 32, before: 360 },
  { size: 28, before: 320 },
  { size: 26, before: 280 },
  { size: 24, before: 240 },
  { size: 22, before: 240 },
  { size: 22, before: 240, italics: true },
] as const;

/**
 * Heading 1–6 as Word's built-in styles with what the docx library leaves out: the outline
 * level (Word's navigation pane, LibreOffice's Navigator, PDF bookmarks and tables of
 * contents all read it), bold, space around, and keep-with-next so a heading never ends a page.
 */
function headingStyle(level: number) {
  const { size, before, ...rest } = HEADING_LOOK[level];
  return {
    name: `heading ${level + 1}`,
    basedOn: "Normal",
    next: "Normal",
    quickFormat: true,
    run: { bold: true, size, color: "1F1F1F", ...rest },
    paragraph: { outlineLevel: level, keepNext: true, keepLines: true, spacing: { before, after: 120 } },
  };
}

export const docxStyles: IStylesOptions = {
  default: {
    document: { run: { font: "Calibri", size: 22 }, paragraph: { spacing: { after: 120 } } },
    heading1: headingStyle(0),
    heading2: headingStyle(1),
    heading3: headingStyle(2),
    heading4: headingStyle(3),
    heading5: headingStyle(4),
    heading6: headingStyle(5),
  },
  paragraphStyles: [
    {
      id: STYLE.codeBlock,
      name: "Code Block",
      basedOn: "Normal",
      next: "Normal",
      quickFormat: true,
      run: { font: MONOSPACE, size: 19 },
      paragraph: { spacing: { before: 0, after: 0 }, shading: CODE_SHADING },
    },
    {
      id: STYLE.quote,
      name: "Quote",
      basedOn: "Normal",
      next: "Normal",
      quickFormat: true,
      run: { italics: true, color: "404040" },
      paragraph: {
        indent: { left: 720 },
        border: { left: { style: BorderStyle.SINGLE, size: 12, color: "A6A6A6", space: 8 } },
      },
    },
  ],
  characterStyles: [
    {
      id: STYLE.inlineCode,
      name: "Inline Code",
      run: { font: MONOSPACE, size: 19, shading: CODE_SHADING },
    },
  ],
};

const BULLETS = ["\u2022", "\u25e6", "\u25aa"];

function levels(ordered: boolean, start: number): ILevelsOptions[] {
  return Array.from({ length: 9 }, (_, level) => ({
    level,
    format: ordered ? LevelFormat.DECIMAL : LevelFormat.BULLET,
    // Only the level's own number: a nested Markdown list is numbered 1, 2, 3, not 1.1, 1.2.
    text: ordered ? `%${level + 1}.` : BULLETS[level % BULLETS.length],
    alignment: AlignmentType.LEFT,
    start,
    style: { paragraph: { indent: { left: 720 * (level + 1), hanging: 360 } } },
  }));
}

const BULLET_LIST = "bullet-list";
const NUMBERED_LIST = "numbered-list";

export const docxNumbering: INumberingOptions = {
  config: [
    { reference: BULLET_LIST, levels: levels(false, 1) },
    { reference: NUMBERED_LIST, levels: levels(true, 1) },
  ],
};

/**
 * The list definition for a Markdown list. An ordered list that starts elsewhere than 1
 * (`3. third`) gets a definition of its own; the docx library adds it to the document
 * the first time a paragraph uses it.
 */
export function listReference(ordered: boolean, start: number) {
  if (!ordered) return BULLET_LIST;
  if (start === 1) return NUMBERED_LIST;
  return { reference: `${NUMBERED_LIST}-from-${start}`, levels: levels(true, start) };
}
