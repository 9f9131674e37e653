/**
 * LaTeX math in trees with `latex: true`. Markdown would read `_` and `*` inside `$a_1*b_2$`
 * as emphasis, so math spans are swapped for inert placeholders before Markdown is parsed
 * and put back, untouched, afterwards; the reader's own MathJax or KaTeX can then find
 * `$...$` and `$$...$$` as written.
 *
 * Inline math follows pandoc's rule, which keeps prices like "$5 and $10" as text: the
 * opening `$` is not followed by white space, the closing `$` is not preceded by it nor
 * followed by a digit, and neither is escaped with a backslash. Neither kind may span a
 * blank line, and inline math may not hold a backtick; code spans and fenced code blocks
 * are never searched for math.
 *
 * `typesetMath` turns a span into MathML with Temml (pinned, as the browser client uses the
 * same version), for the html export and, through it, the docx and pptx ones.
 */

import temml from "temml";

// Code is matched first and kept as it is, so `$$` in a code span or block is never math.
// A fence runs to its closing fence or, unclosed, to the end (CommonMark); a code span to the
// next run of as many backticks, within its paragraph.
export const FENCE = String.raw`(?<=^|\n) {0,3}(\`{3,}|~{3,})[^\n]*(?:\n[^]*?(?:\n {0,3}\1[ \t]*(?=\n|$)|$)|$)`;
export const CODE_SPAN = String.raw`(?<!\`)(\`+)(?!\`)(?:(?!\n[ \t]*\n)[^])*?(?<!\`)\2(?!\`)`;
const DISPLAY = String.raw`(?<!\\)\$\$(?:(?!\n[ \t]*\n)[^])+?\$\$`;
const INLINE = String.raw`(?<![\\$])\$(?![\s$])(?:\\[^\n]|[^$\\\n` + "`" + String.raw`]|\n(?![ \t]*\n))+?(?<![\s\\])\$(?!\d)`;
const MATH = new RegExp(`${FENCE}|${CODE_SPAN}|${DISPLAY}|${INLINE}`, "g");

// Private-use characters: not white space or punctuation, so Markdown treats a
// placeholder like a word, exactly where the math stood.
const OPEN = "\uE000";
const CLOSE = "\uE001";

export interface ProtectedMath {
  /** The Markdown with every math span replaced by a placeholder. */
  text: string;
  /**
   * Puts the math back into `output`, each span passed through `encode` (e.g. HTML
   * escaping, or typesetting). A placeholder that ended up percent-encoded in a link
   * destination gets its span percent-encoded the same way, as if the math had been written
   * there as text; `encode` is then told `inUrl`.
   */
  restore(output: string, encode?: (math: string, inUrl: boolean) => string): string;
}

/** Swaps the math spans of `markdown` for placeholders. Throws nothing. */
export function protectMath(markdown: string): ProtectedMath {
  const spans: string[] = [];
  // A fresh tag per call, so a placeholder-like sequence typed into a card is not mistaken for one.
  const tag = Math.random().toString(36).slice(2, 8).replace(/[0-9]/g, "x");
  const text = markdown.replace(MATH, (span, fence: string | undefined, ticks: string | undefined) =>
    fence !== undefined || ticks !== undefined ? span : `${OPEN}${tag}${spans.push(span) - 1}${CLOSE}`,
  );
  const placeholder = new RegExp(`${OPEN}${tag}(\\d+)${CLOSE}|${OPEN_URL}${tag}(\\d+)${CLOSE_URL}`, "gi");
  return {
    text,
    restore(output, encode = (math) => math) {
      if (spans.length === 0) return output;
      return output.replace(placeholder, (whole, plain: string | undefined, inUrl: string | undefined) => {
        const span = spans[Number(plain ?? inUrl)];
        if (span === undefined) return whole;
        return plain !== undefined ? encode(span, false) : encode(encodeURI(span.replace(LONE_SURROGATE, "\uFFFD")), true);
      });
    },
  };
}

const OPEN_URL = encodeURIComponent(OPEN);
const CLOSE_URL = encodeURIComponent(CLOSE);
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A math span (`$...$` or `$$...$$`, as found by `protectMath`) as MathML, display math as a
 * block; undefined when Temml cannot read it (the caller shows the source instead). Temml
 * runs untrusted: no `\\href`, `\\class` or `\\style`, macro expansion bounded; a pathological
 * nesting that overflows its parser is caught like any other error.
 */
export function typesetMath(span: string): string | undefined {
  const display = span.startsWith("$$");
  const tex = display ? span.slice(2, -2) : span.slice(1, -1);
  try {
    return temml.renderToString(tex, { displayMode: display, throwOnError: true, trust: false, maxExpand: 1000 });
  } catch {
    return undefined;
  }
}
