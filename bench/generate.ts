/**
 * Deterministic test data for the benchmarks: trees of cards shaped like real outlines
 * (a few top-level parts, chapters, scenes, notes; depth up to 8) with Markdown content of
 * mixed lengths, and Markdown documents with a given number of headings for the import
 * and pandoc scenarios. A fixed-seed generator makes every run write the same bytes.
 */
import { seededRandom } from "../test/helpers/seeded-random.js";

/** The tests' seeded generator (mulberry32), under the name the bench uses. */
export const randomSource = seededRandom;

const WORDS = (
  "the a of and to in is was that it for on with as his her they at by this had from but not " +
  "river winter letter garden station silence harbour window morning lantern promise shadow " +
  "paper stone bridge village journey memory candle orchard market thunder mirror question " +
  "walked whispered remembered carried opened waited answered followed noticed forgot " +
  "quietly slowly suddenly almost nearly again still never always perhaps"
).split(" ");

export interface SeedNode {
  content: string;
  children?: SeedNode[];
}

class TextMaker {
  constructor(private readonly random: () => number) {}

  int(min: number, max: number): number {
    return min + Math.floor(this.random() * (max - min + 1));
  }

  words(count: number): string {
    const out: string[] = [];
    for (let i = 0; i < count; i++) out.push(WORDS[this.int(0, WORDS.length - 1)]);
    return out.join(" ");
  }

  sentence(): string {
    const s = this.words(this.int(6, 16));
    const decorated = this.random() < 0.15 ? s.replace(/(\w+) (\w+)$/, "**$1** _$2_") : s;
    return `${decorated[0].toUpperCase()}${decorated.slice(1)}.`;
  }

  paragraph(sentences: number): string {
    return Array.from({ length: sentences }, () => this.sentence()).join(" ");
  }

  block(): string {
    const kind = this.random();
    if (kind < 0.7) return this.paragraph(this.int(1, 3));
    if (kind < 0.85) return Array.from({ length: this.int(2, 5) }, () => `- ${this.words(this.int(3, 8))}`).join("\n");
    if (kind < 0.95) return `> ${this.paragraph(1)}`;
    return "```js\nconst " + this.words(1) + " = " + this.int(1, 999) + ";\n```";
  }

  /** Half short headings, a third paragraphs, the rest long multi-block cards. */
  cardContent(depth: number): string {
    const kind = this.random();
    const heading = `${"#".repeat(Math.min(depth, 6))} ${this.words(this.int(2, 6))}`;
    if (kind < 0.5) return heading;
    if (kind < 0.85) return this.block();
    const blocks = [heading];
    for (let i = this.int(2, 5); i > 0; i--) blocks.push(this.block());
    return blocks.join("\n\n");
  }
}

const MAX_DEPTH = 8;

/**
 * A tree of `count` cards. Each new card goes under one of the few most recently made
 * cards (as one writes an outline), sometimes starts a new first-column part, and never
 * below depth 8. Returns the top-level nodes, nested.
 */
export function generateTree(count: number, seed = 1): SeedNode[] {
  const random = randomSource(seed);
  const text = new TextMaker(random);
  const roots: SeedNode[] = [];
  const recent: { node: SeedNode; depth: number }[] = [];
  for (let i = 0; i < count; i++) {
    let parent: { node: SeedNode; depth: number } | undefined;
    if (recent.length > 0 && random() > 0.01) {
      parent = recent[Math.max(0, recent.length - 1 - Math.floor(random() * 12))];
      if (parent.depth >= MAX_DEPTH || random() < 0.25) parent = recent[Math.max(0, recent.length - 1 - text.int(12, 60))];
      if (parent.depth >= MAX_DEPTH) parent = undefined;
    }
    const depth = parent ? parent.depth + 1 : 1;
    const node: SeedNode = { content: text.cardContent(depth) };
    if (parent) (parent.node.children ??= []).push(node);
    else roots.push(node);
    recent.push({ node, depth });
    if (recent.length > 400) recent.splice(0, 200);
  }
  return roots;
}

/** Splits top-level nodes into groups of at most `maxCards` cards each (whole subtrees). */
export function chunkTree(roots: readonly SeedNode[], maxCards: number): SeedNode[][] {
  const chunks: SeedNode[][] = [];
  let current: SeedNode[] = [];
  let size = 0;
  for (const root of roots) {
    const n = countCards([root]);
    if (size > 0 && size + n > maxCards) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(root);
    size += n;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

export function countCards(nodes: readonly SeedNode[]): number {
  let count = 0;
  const stack = [...nodes];
  while (stack.length > 0) {
    const node = stack.pop()!;
    count++;
    if (node.children) stack.push(...node.children);
  }
  return count;
}

export function maxDepth(nodes: readonly SeedNode[]): number {
  let deepest = 0;
  const stack = nodes.map((node) => ({ node, depth: 1 }));
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    deepest = Math.max(deepest, depth);
    for (const child of node.children ?? []) stack.push({ node: child, depth: depth + 1 });
  }
  return deepest;
}

/**
 * A Markdown document of about `bytes` bytes made of `headings` sections, each a heading
 * and one block, heading levels 1–4 never jumping more than one level deeper. One block per
 * section makes exactly one card per heading on import (SPEC §7 rule 4).
 */
export function generateMarkdown(bytes: number, headings: number, seed = 2): string {
  const text = new TextMaker(randomSource(seed));
  const perSection = bytes / headings;
  const sections: string[] = [];
  let level = 1;
  for (let i = 0; i < headings; i++) {
    level = i === 0 ? 1 : Math.max(1, Math.min(4, level + text.int(-2, 1)));
    const heading = `${"#".repeat(level)} ${text.words(text.int(2, 5))}`;
    let body = text.paragraph(1);
    while (heading.length + body.length + 2 < perSection - 40) body += ` ${text.sentence()}`;
    sections.push(`${heading}\n\n${body}`);
  }
  return `${sections.join("\n\n")}\n`;
}
