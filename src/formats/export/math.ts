/**
 * LaTeX math in trees with `latex: true`. Markdown would read `_` and `*` inside `$a_1*b_2$`
 * as emphasis, so math spans are swapped for inert placeholders before Markdown is parsed
 * and put back, untouched, afterwards; the reader's own MathJax or KaTeX can then find
 * `$...$` and `$$...$$` as written.
 *
 * Inline math follows pandoc's rule, which keeps prices like "$5 and $10" as text: the
 * opening `$` is not followed by white space, the closing `$` is not preceded by it nor
 * followed by a digit, and neither is escaped with a backslash. Neither kind may span a
 * blank line, and inline math may not hold a backtick, so code spans stay code spans.
 */

const DISPLAY = String.raw`(?<!\\)\$\$(?:(?!\n[ \t]*\n)[^])+?\$\$`;
const INLINE = String.raw`(?<![\\$])\$(?![\s$])(?:\\[^\n]|[^$\\\n` + "`" + String.raw`]|\n(?![ \t]*\n))+?(?<![\s\\])\$(?!\d)`;
const MATH = new RegExp(`${DISPLAY}|${INLINE}`, "g");

// Private-use characters: not white space or punctuation, so Markdown treats a
// placeholder like a word, exactly where the math stood.
const OPEN = "\uE000";
const CLOSE = "\uE001";

export interface ProtectedMath {
  /** The Markdown with every math span replaced by a placeholder. */
  text: string;
  /**
   * Puts the math back into `output`, each span passed through `encode` (e.g. HTML
   * escaping). A placeholder that ended up percent-encoded in a link destination gets its
   * span percent-encoded the same way, as if the math had been written there as text.
   */
  restore(output: string, encode?: (math: string) => string): string;
}

/** Swaps the math spans of `markdown` for placeholders. Throws nothing. */
export function protectMath(markdown: string): ProtectedMath {
  const spans: string[] = [];
  // A fresh tag per call, so a placeholder-like sequence typed into a card is not mistaken for one.
  const tag = Math.random().toString(36).slice(2, 8).replace(/[0-9]/g, "x");
  const text = markdown.replace(MATH, (span) => `${OPEN}${tag}${spans.push(span) - 1}${CLOSE}`);
  const placeholder = new RegExp(`${OPEN}${tag}(\\d+)${CLOSE}|${OPEN_URL}${tag}(\\d+)${CLOSE_URL}`, "gi");
  return {
    text,
    restore(output, encode = (math) => math) {
      if (spans.length === 0) return output;
      return output.replace(placeholder, (whole, plain: string | undefined, inUrl: string | undefined) => {
        const span = spans[Number(plain ?? inUrl)];
        if (span === undefined) return whole;
        return encode(plain !== undefined ? span : encodeURI(span.replace(LONE_SURROGATE, "\uFFFD")));
      });
    },
  };
}

const OPEN_URL = encodeURIComponent(OPEN);
const CLOSE_URL = encodeURIComponent(CLOSE);
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
