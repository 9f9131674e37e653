/**
 * The opml export (SPEC §14): an OPML 2.0 outline, one `<outline>` per card, nested as the
 * cards are. `text` holds a card's first line and `_note` the rest (written whenever the
 * card has more than one line, even an empty rest, so that the import gives back exactly
 * the card's text). Line breaks, tabs and carriage returns are written as character
 * references, which XML keeps in attribute values. The characters XML 1.0 cannot hold at all,
 * not even as references (control characters other than those three, lone surrogates,
 * U+FFFE and U+FFFF), are written as U+FFFD: the one loss of this format, which the json and
 * gkw exports do not have (docs/files.md).
 *
 * `<opml>` declares OUR_NAMESPACE: our import then takes `text` as Markdown, as written,
 * where for other outliners' files it reads `<br>` as a line break.
 */
import { OUR_NAMESPACE } from "../opml-import.js";
import type { ExportInput } from "./select.js";

/** Deeper outlines are written at this indentation: 10,000 levels of tabs would be most of the file. */
const MAX_INDENT = 32;

export function opmlExporter({ tree, selected }: ExportInput): string {
  const out: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>\n',
    `<opml version="2.0" xmlns:cardtree="${OUR_NAMESPACE}">\n`,
    "  <head>\n",
    `    <title>${escapeXml(tree.name, false)}</title>\n`,
    `    <dateCreated>${new Date(tree.createdAt).toUTCString()}</dateCreated>\n`,
    `    <dateModified>${new Date(tree.updatedAt).toUTCString()}</dateModified>\n`,
    "  </head>\n",
    "  <body>",
  ];
  // The cards open around the current one, innermost last; an outline with children is left open.
  const open: string[] = [];
  const close = () => {
    open.pop();
    out.push("\n", indent(open.length + 2), "</outline>");
  };
  for (let i = 0; i < selected.length; i++) {
    const { card } = selected[i];
    while (open.length > 0 && open[open.length - 1] !== card.parentId) close();
    const lineEnd = card.content.indexOf("\n");
    const text = lineEnd < 0 ? card.content : card.content.slice(0, lineEnd);
    out.push("\n", indent(open.length + 2), '<outline text="', escapeXml(text, true), '"');
    if (lineEnd >= 0) out.push(' _note="', escapeXml(card.content.slice(lineEnd + 1), true), '"');
    const hasChildren = selected[i + 1]?.card.parentId === card._id;
    if (hasChildren) {
      out.push(">");
      open.push(card._id);
    } else {
      out.push("/>");
    }
  }
  while (open.length > 0) close();
  out.push("\n  </body>\n</opml>\n");
  return out.join("");
}

function indent(depth: number): string {
  return "  ".repeat(Math.min(depth, MAX_INDENT));
}

/** Characters XML 1.0 allows only as references in attributes, or not at all. */
const NEEDS_ESCAPE = /[&<>"\u0000-\u001f\ud800-\udfff\ufffe\uffff]/g;
const NAMED: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

/**
 * `text` as XML character data (an attribute value when `attribute`). A surrogate pair is
 * written as it is; what XML cannot hold as U+FFFD.
 */
function escapeXml(text: string, attribute: boolean): string {
  return text.replace(NEEDS_ESCAPE, (char, offset: number) => {
    const named = NAMED[char];
    if (named) return named;
    if (char === "\n" || char === "\t" || char === "\r") return attribute ? `&#${char.charCodeAt(0)};` : char;
    const code = char.charCodeAt(0);
    if (isHigh(code) && isLow(text.charCodeAt(offset + 1))) return char;
    if (isLow(code) && isHigh(text.charCodeAt(offset - 1))) return char;
    return "\ufffd";
  });
}

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;
