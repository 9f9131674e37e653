/**
 * OPML 2.0 seeds (SPEC §14): each `<outline>` under `<body>` is a card, nested outlines its
 * children; a card's text is `text`, then a newline and `_note` when there is one (the
 * convention of OmniOutliner, Workflowy and Dynalist, and of our own opml export).
 *
 * Read with saxes, a strict, streaming XML parser (jsdom's): it never expands an entity a
 * document defines and never fetches anything, so XXE and billion-laughs files have nothing
 * to work with, and it keeps no recursion, so depth costs nothing more than length. On top
 * of that a DOCTYPE is refused outright: an outline has no use for one.
 *
 * What other outliners write, and how it reads here:
 * - raw line breaks, tabs and `<` inside attribute values (Gingko Writer writes a card's
 *   whole Markdown into `text` so): a conforming parser folds the breaks into spaces, so
 *   `keepAttributeBreaks` turns them into character references before parsing;
 * - `<br>` in `text` or `_note` (escaped as `&lt;br&gt;`, or raw): a line break, except in
 *   our own files (marked by OUR_NAMESPACE), where text is Markdown taken as written;
 * - HTML entities XML does not define (`&nbsp;`, `&eacute;`): kept as written, which is
 *   what they mean in Markdown too;
 * - `head` fields, attributes other than `text` and `_note`, and elements other than
 *   `outline` (with what is inside them): ignored.
 */
import { SaxesParser, type SaxesTagPlain } from "saxes";
import { ValidationError } from "../shared/errors.js";
import type { ImportNode } from "../shared/records.js";

/** The namespace our opml export declares on `<opml>`; its files' text is Markdown as written. */
export const OUR_NAMESPACE = "urn:cardtree:opml";

/**
 * Reads an OPML document into the cards to create.
 * @throws ValidationError for anything that is not a well-formed OPML document: XML
 *   errors (with line and column), a DOCTYPE, a root other than `<opml>`, no `<body>`.
 */
export function opmlToCards(text: string): ImportNode[] {
  const roots: ImportNode[] = [];
  // One entry per open element: the card it makes (null: not an outline, or inside one that is not).
  const open: ({ node: ImportNode | null; name: string })[] = [];
  let ours = false;
  let sawBody = false;
  const parser = new SaxesParser({ position: true, xmlns: false });
  const refuse = (message: string, path = "seed"): never => {
    throw new ValidationError(`This OPML file cannot be imported: ${message}`, [
      { path, message: `line ${parser.line}, column ${parser.column}: ${message}` },
    ]);
  };
  parser.on("error", (error) => {
    // An entity XML does not define (`&nbsp;`) stays as written: in Markdown it means the same.
    if (/undefined entity/.test(error.message)) return;
    refuse(error.message.replace(/^\d+:\d+: /, ""));
  });
  parser.on("doctype", () => refuse("it has a DOCTYPE, which an OPML file does not need and which is refused for safety."));
  parser.on("opentag", (tag: SaxesTagPlain) => {
    const parent = open[open.length - 1];
    if (!parent) {
      if (tag.name !== "opml") refuse(`its root element is <${tag.name}>, not <opml>.`);
      ours = tag.attributes["xmlns:cardtree"] === OUR_NAMESPACE;
      open.push({ node: null, name: tag.name });
      return;
    }
    if (open.length === 1 && tag.name === "body") sawBody = true;
    const underBody = open.length >= 2 && open[1].name === "body";
    const inOutline = open.length === 2 || parent.node !== null;
    if (tag.name === "outline" && underBody && inOutline) {
      const node = outlineCard(tag.attributes, ours);
      if (parent.node) (parent.node.children ??= []).push(node);
      else roots.push(node);
      open.push({ node, name: tag.name });
      return;
    }
    open.push({ node: null, name: tag.name });
  });
  parser.on("closetag", () => {
    open.pop();
  });
  parser.write(keepAttributeBreaks(text)).close();
  if (!sawBody) refuse("it has no <body> element, where an OPML file keeps its outlines.");
  return roots;
}

/** A card from an outline's attributes: `text`, then a newline and `_note` when present. */
function outlineCard(attributes: Record<string, string>, ours: boolean): ImportNode {
  const text = attributes.text ?? "";
  const note = attributes._note;
  const content = note === undefined ? text : `${text}\n${note}`;
  return { content: ours ? content : content.replace(/<br\s*\/?>/gi, "\n") };
}

/**
 * `text` with every line break, tab and `<` inside a quoted attribute value written as a
 * character reference, so that the parser keeps them (XML folds raw breaks in attributes
 * into spaces, and refuses a raw `<`). Comments, CDATA, processing instructions and
 * declarations are passed over as they are. Linear, and a copy only when something changes.
 */
export function keepAttributeBreaks(text: string): string {
  const out: string[] = [];
  let copied = 0;
  const escapable = nextMatches(text, /[\n\r\t<]/g);
  let i = text.indexOf("<");
  while (i >= 0 && i < text.length) {
    if (text.startsWith("<!--", i)) i = after(text, "-->", i + 4);
    else if (text.startsWith("<![CDATA[", i)) i = after(text, "]]>", i + 9);
    else if (text.startsWith("<?", i)) i = after(text, "?>", i + 2);
    else if (text.startsWith("<!", i)) i = after(text, ">", i + 2);
    else {
      // A tag: step over its quoted values, up to its closing `>`.
      let j = i + 1;
      while (j < text.length && text[j] !== ">") {
        const quote = text[j];
        if (quote !== '"' && quote !== "'") {
          j++;
          continue;
        }
        const end = text.indexOf(quote, j + 1);
        const stop = end < 0 ? text.length : end;
        for (let found = escapable.from(j + 1); found !== null && found < stop; found = escapable.from(found + 1)) {
          out.push(text.slice(copied, found), ATTRIBUTE_ESCAPES[text[found]]);
          copied = found + 1;
        }
        j = stop + 1;
      }
      i = j + 1;
    }
    i = text.indexOf("<", i);
  }
  if (copied === 0) return text;
  out.push(text.slice(copied));
  return out.join("");
}

const ATTRIBUTE_ESCAPES: Record<string, string> = { "\n": "&#10;", "\r": "&#13;", "\t": "&#9;", "<": "&lt;" };

/**
 * The next match of `pattern` (global) at or after a position, for positions that only grow:
 * a search is repeated only once the last match is behind, so a whole scan stays linear.
 */
function nextMatches(text: string, pattern: RegExp): { from(position: number): number | null } {
  let next: number | null | undefined;
  return {
    from(position) {
      if (next === null || (next !== undefined && next >= position)) return next;
      pattern.lastIndex = position;
      next = pattern.exec(text)?.index ?? null;
      return next;
    },
  };
}

/** The index just past the next `end` from `from`, or the text's length when there is none. */
function after(text: string, end: string, from: number): number {
  const at = text.indexOf(end, from);
  return at < 0 ? text.length : at + end.length;
}
