/**
 * Footnotes (`text[^1]` and `[^1]: the note`, as pandoc and GitHub write them), which marked
 * does not read: the definitions are taken out of a card before it is lexed, and each
 * reference becomes a mark in the text (like math's placeholders), so every exporter can put
 * its own kind of note there: Word footnotes in docx, endnotes in html, a numbered note at the
 * end of the card on slides. Numbers follow the first reference in the document.
 */
import { CODE_SPAN, FENCE } from "./math.js";

const OPEN = "\uE004";
const CLOSE = "\uE005";
const REFERENCE = String.raw`\[\^([^\]\s\uE004\uE005]{1,100})\]`;
// Code first (kept as it is), then a reference.
const CODE_OR_REFERENCE = new RegExp(`${FENCE}|${CODE_SPAN}|${REFERENCE}`, "g");
const DEFINITION = /^ {0,3}\[\^([^\]\s]{1,100})\]:[ \t]?(.*)$/;
const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * The card without its footnote definitions, each reference `[^label]` (outside code) turned
 * into a mark, and the definitions by label. Definitions continue on lines indented by four
 * spaces or a tab. Throws nothing; linear.
 */
export function extractFootnotes(content: string): { body: string; definitions: Map<string, string> } {
  const definitions = new Map<string, string>();
  if (!content.includes("[^")) return { body: content, definitions };
  const kept: string[] = [];
  const lines = content.split("\n");
  let fence: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const opening = FENCE_LINE.exec(line);
    if (fence !== null) {
      if (opening && opening[1][0] === fence[0] && opening[1].length >= fence.length) fence = null;
      kept.push(line);
      continue;
    }
    if (opening) fence = opening[1];
    const definition = opening ? null : DEFINITION.exec(line);
    if (!definition) {
      kept.push(line);
      continue;
    }
    const text = [definition[2]];
    while (i + 1 < lines.length && (/^(?: {4}|\t)/.test(lines[i + 1]) || (lines[i + 1].trim() === "" && /^(?: {4}|\t)\S/.test(lines[i + 2] ?? "")))) {
      text.push(lines[++i].replace(/^(?: {4}|\t)/, ""));
    }
    if (!definitions.has(definition[1])) definitions.set(definition[1], text.join("\n").trim());
  }
  const body = kept
    .join("\n")
    .replace(CODE_OR_REFERENCE, (whole, fenceMark, ticks, label: string | undefined) => (label === undefined ? whole : `${OPEN}${label}${CLOSE}`));
  return { body, definitions };
}

/** A run's text as plain text and footnote references (by label), in order. */
export function splitFootnotes(text: string): { text: string; label?: string }[] {
  if (!text.includes(OPEN)) return [{ text }];
  const parts: { text: string; label?: string }[] = [];
  for (const [, plain, label] of text.matchAll(/([^\uE004]+)|\uE004([^\uE005]*)\uE005?/g)) {
    if (plain !== undefined) parts.push({ text: plain });
    else parts.push({ text: `[^${label}]`, label });
  }
  return parts;
}

/** `text` with every reference mark written back as `[^label]` (where a note cannot go). */
export function footnotesAsWritten(text: string): string {
  return text.includes(OPEN) ? text.replace(/\uE004([^\uE005]*)\uE005/g, "[^$1]") : text;
}

/**
 * The footnotes of one document: the definitions of all its cards (the first in tree order
 * for a label defined twice), numbered as their first reference is met.
 */
export class FootnoteNumbers {
  private readonly numbers = new Map<string, number>();
  readonly order: { label: string; number: number; text: string }[] = [];

  constructor(private readonly definitions: ReadonlyMap<string, string>) {}

  /** The note's number, or undefined when no card defines `label` (the reference stays as written). */
  number(label: string): number | undefined {
    const known = this.numbers.get(label);
    if (known !== undefined) return known;
    const text = this.definitions.get(label);
    if (text === undefined) return undefined;
    const number = this.order.length + 1;
    this.numbers.set(label, number);
    this.order.push({ label, number, text });
    return number;
  }
}

/** Every card's definitions as one map, the first in tree order winning. */
export function documentFootnotes(cards: readonly { footnotes?: ReadonlyMap<string, string> }[]): Map<string, string> {
  const all = new Map<string, string>();
  for (const card of cards) for (const [label, text] of card.footnotes ?? []) if (!all.has(label)) all.set(label, text);
  return all;
}

const SUPERSCRIPT_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹";

/** `n` in superscript digits, for text that cannot raise a run (slides). */
export function superscriptNumber(n: number): string {
  return [...String(n)].map((digit) => SUPERSCRIPT_DIGITS[Number(digit)]).join("");
}
