/**
 * LaTeX in cards of a tree with `latex` on: `$$…$$` displayed, `$…$` inline (pandoc's rule:
 * no space just inside the dollars, no digit right after the closing one, so "$5 and $10"
 * stays prose). Temml turns each formula into MathML, which Chromium, Firefox and Safari draw
 * natively: no fonts, no script of its own, nothing that the CSP has to allow.
 *
 * Formulas are cut out of the Markdown before it is rendered (Markdown would read `_` and `*`
 * in them as emphasis) and stand there as tokens; the rendered card's text nodes then get the
 * MathML in place of the tokens. Only text nodes: a token that ended up in an attribute (a
 * formula used as a link target) stays text, so MathML can never be spliced into markup.
 * Temml's output is sanitized again (MathML profile) before it enters the page.
 *
 * Temml is half the client's script, and only trees with `latex` need it: it is loaded on
 * first need (`loadMath`, a chunk of its own; lazy.ts). Until it is there, `insertMath`
 * answers false and the card (views/card.ts) is drawn again once it is.
 */
type Temml = typeof import("temml").default;
type Purify = typeof import("dompurify").default;
let temml: Temml | null = null;
/**
 * DOMPurify, loaded with Temml: imported statically here it was evaluated with the app's own
 * script on every page (it is the instance markdown-render.ts sets its hooks on; a module is
 * one instance however it is imported).
 */
let purify: Purify | null = null;
let loading: Promise<void> | null = null;

/** Loads Temml (and the sanitizer) once; resolves when formulas can be drawn. */
export function loadMath(): Promise<void> {
  loading ??= Promise.all([import("temml"), import("dompurify")]).then(
    ([module, sanitizer]) => {
      temml = module.default;
      purify = sanitizer.default;
    },
    (error: unknown) => {
      loading = null;
      throw error;
    },
  );
  return loading;
}

export interface Formula {
  tex: string;
  display: boolean;
}

// Letters only, so Markdown leaves the token alone; random, so no card can contain it by chance.
const TOKEN = `CTMATH${Math.random().toString(36).replace(/[^a-z]/g, "").slice(0, 8)}`;
const TOKEN_PATTERN = new RegExp(`${TOKEN}N(\\d+)X`, "g");

// Code spans are matched first so dollars inside them stay as written; `\$` is a literal dollar.
const MATH_PATTERN = /(`+)[\s\S]*?\1|\\\$|\$\$([\s\S]+?)\$\$|\$(?![\s$])((?:\\.|[^$\\\n])+?)(?<![\s\\])\$(?!\d)/g;

/** The source with its formulas replaced by tokens, and the formulas in token order. */
export function extractMath(source: string): { text: string; formulas: Formula[] } {
  const formulas: Formula[] = [];
  if (!source.includes("$")) return { text: source, formulas };
  const lines = source.split("\n");
  const out: string[] = [];
  let chunk: string[] = [];
  let fence: string | null = null;
  const flush = () => {
    if (chunk.length === 0) return;
    out.push(
      chunk.join("\n").replace(MATH_PATTERN, (match, ticks: string | undefined, display: string | undefined, inline: string | undefined) => {
        if (ticks !== undefined || (display === undefined && inline === undefined)) return match;
        formulas.push({ tex: (display ?? inline)!.trim(), display: display !== undefined });
        return `${TOKEN}N${formulas.length - 1}X`;
      }),
    );
    chunk = [];
  };
  for (const line of lines) {
    const opening = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === null && opening) {
      flush();
      fence = opening[1][0];
      out.push(line);
    } else if (fence !== null) {
      if (opening && opening[1][0] === fence) fence = null;
      out.push(line);
    } else {
      chunk.push(line);
    }
  }
  flush();
  return { text: out.join("\n"), formulas };
}

const rendered = new Map<string, string>();

function mathml(temml: Temml, formula: Formula): string {
  const key = `${formula.display ? "D" : "I"}${formula.tex}`;
  let html = rendered.get(key);
  if (html === undefined) {
    // trust: false (the default) refuses \href and \includegraphics; errors show as red text.
    let raw: string;
    try {
      raw = temml.renderToString(formula.tex, { displayMode: formula.display, throwOnError: false });
    } catch {
      // throwOnError covers parse errors only; some inputs make Temml itself fail. The card
      // still renders, the formula shown as written.
      const span = document.createElement("span");
      span.className = "temml-error";
      span.textContent = formula.display ? `$$${formula.tex}$$` : `$${formula.tex}$`;
      raw = span.outerHTML;
    }
    html = purify!.sanitize(raw, { USE_PROFILES: { mathMl: true, html: true }, FORBID_TAGS: ["style", "a"], FORBID_ATTR: ["href", "style"] });
    if (rendered.size > 2000) rendered.clear();
    rendered.set(key, html);
  }
  return html;
}

/**
 * Puts each formula's MathML where its token stands in the text of `root`. Before Temml is
 * loaded (loadMath), each formula stands as written, and the answer is false: draw again later.
 */
export function insertMath(root: HTMLElement, formulas: Formula[]): boolean {
  if (formulas.length === 0) return true;
  const engine = temml;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const hits: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) if (node.nodeValue?.includes(TOKEN)) hits.push(node as Text);
  for (const node of hits) {
    const text = node.nodeValue ?? "";
    const parts: (string | Node)[] = [];
    let last = 0;
    for (const match of text.matchAll(TOKEN_PATTERN)) {
      parts.push(text.slice(last, match.index));
      const formula = formulas[Number(match[1])];
      if (formula && !engine) {
        parts.push(formula.display ? `$$${formula.tex}$$` : `$${formula.tex}$`);
      } else {
        const template = document.createElement("template");
        template.innerHTML = formula && engine ? mathml(engine, formula) : match[0];
        parts.push(template.content);
      }
      last = match.index! + match[0].length;
    }
    parts.push(text.slice(last));
    node.replaceWith(...parts);
  }
  return engine !== null;
}
