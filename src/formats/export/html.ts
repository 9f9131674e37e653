/**
 * The html export (SPEC §6): one standalone UTF-8 HTML5 page, titled with the tree name,
 * each card's Markdown rendered with marked and then sanitized with sanitize-html, because
 * cards may hold raw HTML and the page is opened straight from disk. The page carries no
 * script at all, and a Content-Security-Policy that would refuse one anyway.
 */
import { Marked, type Tokens } from "marked";
import sanitizeHtml from "sanitize-html";
import { checkMarkdown, unrenderedHtml } from "../../shared/markdown-guard.js";
import { documentFootnotes, FootnoteNumbers, footnotesAsWritten } from "./footnotes.js";
import { documentProperties, inlineText, lexCards, Slugger, type LexedCard } from "./markdown-inline.js";
import { typesetMath } from "./math.js";
import type { ExportInput } from "./select.js";

/** The whole page for the selected cards, each in its own `<section class="card">`. */
export function htmlExporter({ tree, selected }: ExportInput): string {
  const latex = tree.latex === true;
  const lexed = lexCards(
    selected.map(({ card }) => card.content),
    latex,
  );
  const notes = new FootnoteNumbers(documentFootnotes(lexed));
  const render = cardRenderer(latex, notes);
  const sections = selected.map(
    ({ card, depth }, i) => `<section class="card" data-depth="${depth}">\n${render(card.content, lexed[i])}</section>\n`,
  );
  // Footnotes as endnotes, numbered as their references were met, each with a way back.
  if (notes.order.length > 0) {
    const items = notes.order.map(
      ({ number, text }) =>
        `<li id="fn-${number}">${sanitizeHtml(noteMarkdown.parseInline(text, { async: false }), SANITIZE)} <a href="#fnref-${number}" class="footnote-back" aria-label="Back to the text">\u21a9</a></li>\n`,
    );
    sections.push(`<section class="footnotes">\n<hr>\n<ol>\n${items.join("")}</ol>\n</section>\n`);
  }
  // Front matter (the first card's) becomes the page's title and meta tags, as pandoc does.
  const properties = documentProperties(lexed);
  const meta = (["author", "description", "keywords"] as const)
    .filter((name) => properties[name] !== undefined)
    .map((name) => `<meta name="${name}" content="${escapeHtml(properties[name]!)}">\n`)
    .join("");
  const lang = properties.lang && /^[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*$/.test(properties.lang) ? ` lang="${properties.lang}"` : "";
  return `<!DOCTYPE html>
<html${lang}>
<head>
<meta charset="utf-8">
${meta}
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src http: https: file: 'self'; base-uri 'none'; form-action 'none'">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(properties.title ?? tree.name)}</title>
<style>
${STYLESHEET}
</style>
</head>
<body>
<main>
${sections.join("")}</main>
</body>
</html>
`;
}

/**
 * A renderer for one page: heading ids must be unique across all its cards, so the
 * slugs seen so far live as long as the page does.
 */
function cardRenderer(latex: boolean, notes: FootnoteNumbers): (content: string, lexed: LexedCard) => string {
  const referenced = new Set<number>();
  // A reference becomes its note's number, linked to the endnote; one to no note stays as written.
  const withNotes = (html: string) =>
    html
      .replace(/<[^>]*>/g, footnotesAsWritten)
      .replace(/\uE004([^\uE005]*)\uE005/g, (_, label: string) => {
        const number = notes.number(label);
        if (number === undefined) return escapeHtml(`[^${label}]`);
        const id = referenced.has(number) ? "" : ` id="fnref-${number}"`;
        referenced.add(number);
        return `<sup class="footnote-ref"><a href="#fn-${number}"${id}>${number}</a></sup>`;
      });
  const slugs = new Slugger();
  let restoreMath: LexedCard["restore"] = (text) => text;
  const marked = new Marked({
    gfm: true,
    renderer: {
      heading({ tokens, depth }: Tokens.Heading) {
        const id = slugs.slug(inlineText(tokens, restoreMath));
        return `<h${depth} id="${id}">${this.parser.parseInline(tokens)}</h${depth}>\n`;
      },
      // Plain characters rather than <input>: nothing in the page is a form control.
      checkbox({ checked }: Tokens.Checkbox) {
        return checked ? "\u2611 " : "\u2610 ";
      },
    },
  });
  return (content, { tokens, restore }) => {
    // A card too costly or too deep for marked is shown as its text (src/formats/markdown-guard.ts).
    const verdict = checkMarkdown(content);
    if (!verdict.ok) return unrenderedHtml(content, verdict.note);
    restoreMath = restore;
    const clean = withNotes(sanitizeHtml(marked.parser(tokens), SANITIZE));
    if (!latex) return clean;
    // Math goes back after sanitizing: typeset as MathML (Temml's own output, never the card's
    // markup) where it stands in text, escaped source inside a tag's attributes or a URL.
    const inTags = clean.replace(/<[^>]*>/g, (tag) => restore(tag, escapeHtml));
    return restore(inTags, (span, inUrl) =>
      inUrl ? escapeHtml(span) : (typesetMath(span) ?? `<code class="math-error">${escapeHtml(span)}</code>`),
    );
  };
}

/** Footnote text is inline Markdown of its own. */
const noteMarkdown = new Marked({ gfm: true });

const HEADINGS = ["h1", "h2", "h3", "h4", "h5", "h6"] as const;

/**
 * What a card may keep: sanitize-html's benign defaults plus what Markdown produces
 * (images, strike-through). No style attributes (CSS expressions, overlays), no forms,
 * frames, SVG or MathML from the card (math is Temml's output, added after this); absolute
 * links and images only to http(s), mailto and tel; relative ones are kept, so images
 * beside the saved page load (the CSP allows file: and same-origin images). data: URLs are
 * refused everywhere, images included: the simplest rule that is plainly safe.
 */
const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [...sanitizeHtml.defaults.allowedTags, "img", "del", "ins", "details", "summary"],
  allowedAttributes: {
    a: ["href", "title"],
    // `align` is how READMEs centre a logo or a heading: plain layout, nothing that runs.
    img: ["src", "alt", "title", "width", "height", "align"],
    ...Object.fromEntries(HEADINGS.map((h) => [h, ["id", "align"]])),
    p: ["align"],
    div: ["align"],
    table: ["align"],
    th: ["align"],
    td: ["align"],
    ol: ["start"],
  },
  allowedClasses: { code: ["language-*"] },
  allowedSchemes: ["http", "https", "mailto", "tel"],
  allowedSchemesByTag: {},
  allowedSchemesAppliedToAttributes: ["href", "src", "cite"],
  allowProtocolRelative: false,
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Readable on screen, sensible on paper: one column, serif body, no colors that waste ink. */
const STYLESHEET = `:root { color-scheme: light; }
body { margin: 2rem auto; padding: 0 1rem; max-width: 42rem; font: 1.0625rem/1.6 Georgia, "Times New Roman", serif; color: #1a1a1a; background: #fff; }
h1, h2, h3, h4, h5, h6 { margin: 1.4em 0 0.5em; line-height: 1.25; font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; }
.card { margin: 0 0 1.25rem; }
.unrendered-note { color: #595959; font-size: 0.9em; }
.footnotes { font-size: 0.9em; }
.footnote-ref a, .footnote-back { text-decoration: none; }
a { color: #0645ad; }
img { max-width: 100%; height: auto; }
code, pre { font-family: ui-monospace, Menlo, Consolas, "Courier New", monospace; font-size: 0.9em; }
pre { padding: 0.75rem; overflow-x: auto; background: #f5f5f5; white-space: pre-wrap; }
blockquote { margin: 1em 0; padding-left: 1em; border-left: 3px solid #ccc; color: #444; }
table { border-collapse: collapse; }
th, td { padding: 0.25rem 0.5rem; border: 1px solid #bbb; }
@media print {
  body { margin: 0; max-width: none; font-size: 11pt; }
  a { color: inherit; }
  h1, h2, h3, h4 { break-after: avoid; }
  .card, pre, blockquote, table, img { break-inside: avoid; }
}`;
