/**
 * Math for the formats that cannot hold MathML (docx, pptx): a span is typeset by Temml
 * (`typesetMath`), and its MathML read back into a small tree here. docx-math.ts builds Word
 * equations from the tree; `linearMath` writes it as Unicode text for slides (x² + yᵢ,
 * (a)/(b), √(x)), the best a text box can hold.
 *
 * The MathML is Temml's own output, never a card's markup, so this reader only needs what
 * Temml writes: elements, attributes in double quotes, text and character references.
 */
import { typesetMath } from "./math.js";

export interface MathNode {
  tag: string;
  children: (MathNode | string)[];
}

const TOKEN = /<(\/?)([a-z]+)(?:\s[^>]*?)?(\/?)>|([^<]+)/g;

/** Temml's MathML for `span` as a tree rooted at `<math>`; undefined when Temml cannot read the span. */
export function mathTree(span: string): { display: boolean; root: MathNode } | undefined {
  const mathml = typesetMath(span);
  if (mathml === undefined) return undefined;
  const root: MathNode = { tag: "root", children: [] };
  const stack = [root];
  for (const [, closing, tag, selfClosing, text] of mathml.matchAll(TOKEN)) {
    const top = stack[stack.length - 1];
    if (text !== undefined) {
      top.children.push(decode(text));
    } else if (closing) {
      if (stack.length > 1) stack.pop();
    } else {
      const node: MathNode = { tag, children: [] };
      top.children.push(node);
      if (!selfClosing) stack.push(node);
    }
  }
  const math = root.children.find((child): child is MathNode => typeof child !== "string" && child.tag === "math");
  if (!math) return undefined;
  return { display: span.startsWith("$$"), root: math };
}

function decode(text: string): string {
  return text.replace(/&(?:#x([0-9a-f]+)|#(\d+)|(amp|lt|gt|quot|apos));/gi, (_, hex, dec, name) => {
    if (hex) return String.fromCodePoint(Number.parseInt(hex, 16));
    if (dec) return String.fromCodePoint(Number(dec));
    return { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" }[name as string] ?? "";
  });
}

/** The elements among a node's children (text between them is white space in MathML). */
export function elements(node: MathNode): MathNode[] {
  return node.children.filter((child): child is MathNode => typeof child !== "string");
}

/** All the text of a node, in order. */
export function textOf(node: MathNode): string {
  return node.children.map((child) => (typeof child === "string" ? child : textOf(child))).join("");
}

/** Elements that only group or style their children. */
export const GROUPS = new Set(["math", "mrow", "mstyle", "mpadded", "menclose", "semantics", "merror", "mlabeledtr"]);
/** Elements that draw nothing a reader needs. */
export const SILENT = new Set(["mspace", "mphantom", "annotation", "annotation-xml", "none", "mprescripts"]);

const SUPERSCRIPT: Record<string, string> = Object.fromEntries(
  [..."0123456789+-=()niaebcdfghjklmoprstuvwxyz"].map((c, i) => [c, [..."⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵃᵉᵇᶜᵈᶠᵍʰʲᵏˡᵐᵒᵖʳˢᵗᵘᵛʷˣʸᶻ"][i]]),
);
const SUBSCRIPT: Record<string, string> = Object.fromEntries(
  [..."0123456789+-=()aehijklmnoprstuvx"].map((c, i) => [c, [..."₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"][i]]),
);

/** `text` in Unicode super- or subscript characters, or undefined when one has none. */
function scripted(text: string, table: Record<string, string>): string | undefined {
  const out = [...text.replace(/\u2212/g, "-")].map((c) => table[c]);
  return out.every((c) => c !== undefined) ? out.join("") : undefined;
}

/** Operators written with a space either side in linear text, as a typesetter spaces them. */
const SPACED = new Set([..."=<>≤≥≠≈≡∼→←↔⇒⇐⇔∈∉⊂⊃⊆⊇+−×·±∓÷∪∩∧∨"]);

/** A script part: Unicode super/subscripts when every character has one, else `^(…)` / `_(…)`. */
function script(node: MathNode | undefined, table: Record<string, string>, mark: "^" | "_"): string {
  if (!node) return "";
  const text = linearNode(node).replace(/\s+/g, "");
  const small = scripted(text, table);
  if (small !== undefined) return small;
  return [...text].length === 1 ? `${mark}${text}` : `${mark}(${text})`;
}

/** Wraps a compound part in parentheses, so a/b + c reads right. */
function group(text: string): string {
  return [...text].length <= 1 || /^[\p{N}.]+$/u.test(text) ? text : `(${text})`;
}

/** One subtree as Unicode linear text. */
export function linearNode(node: MathNode): string {
  const [a, b, c] = elements(node);
  if (node.tag === "mspace") return " ";
  if (SILENT.has(node.tag)) return "";
  switch (node.tag) {
    case "mo": {
      const op = textOf(node);
      return SPACED.has(op) ? ` ${op} ` : op;
    }
    case "mi":
    case "mn":
    case "mtext":
    case "ms":
      return textOf(node);
    case "msup":
      return linearNode(a) + script(b, SUPERSCRIPT, "^");
    case "msub":
      return linearNode(a) + script(b, SUBSCRIPT, "_");
    case "msubsup":
    case "munderover":
      return linearNode(a) + script(b, SUBSCRIPT, "_") + script(c, SUPERSCRIPT, "^");
    case "munder":
      return linearNode(a) + script(b, SUBSCRIPT, "_");
    case "mover": {
      // An accent over one letter (x̂, x̄, x⃗) is a combining mark; anything else a superscript.
      const accent = b ? textOf(b) : "";
      const combining: Record<string, string> = { "^": "\u0302", ˆ: "\u0302", "¯": "\u0304", "‾": "\u0305", "→": "\u20D7", "~": "\u0303", "˙": "\u0307" };
      const base = linearNode(a);
      return combining[accent] && [...base].length === 1 ? base + combining[accent] : base + script(b, SUPERSCRIPT, "^");
    }
    case "mfrac":
      return `${group(linearNode(a))}/${group(linearNode(b))}`;
    case "msqrt":
      return `√${group(elements(node).map(linearNode).join(""))}`;
    case "mroot":
      return `${scripted(linearNode(b), SUPERSCRIPT) ?? `(${linearNode(b)})`}√${group(linearNode(a))}`;
    case "mtable":
      return elements(node).map(linearNode).join("; ");
    case "mtr":
      return elements(node).map(linearNode).join(", ");
    default: {
      const children = elements(node);
      if (children.length === 0) return textOf(node);
      // An operator that opens a group is unary (−x): no space after it.
      return children.map((child, i) => (i === 0 && child.tag === "mo" ? textOf(child) : linearNode(child))).join("");
    }
  }
}

/** A math span as Unicode text (`$x^2$` → `x²`); the source itself when Temml cannot read it. */
export function linearMath(span: string): string {
  const tree = mathTree(span);
  if (!tree) return span;
  return (
    linearNode(tree.root)
      .replace(/\s+/g, " ")
      .replace(/([(√]) | ([)])/g, "$1$2")
      // A minus right after a relation or an opening is unary: −1, not − 1.
      .replace(/([=<>≤≥≠≈,;] )([−+]) /g, "$1$2")
      .trim()
  );
}
