/**
 * What the search and the word counts read from cards: words counted as a writer counts them
 * (runs of letters and digits, "don't" and "well-known" one word each; Markdown marks are not
 * words), and a search that ignores case and accents.
 */
import type { Card } from "../../shared/records.js";
import type { TreeReader } from "./tree-state.js";

const WORD = /[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu;

export function countWords(text: string): number {
  let count = 0;
  for (const _ of text.matchAll(WORD)) count++;
  return count;
}

/** Characters as a writer counts them: every character, spaces included, a surrogate pair or an accent on its letter as one. */
export function countCharacters(text: string): number {
  let count = 0;
  for (const _ of text.normalize("NFC")) count++;
  return count;
}

const counted = new WeakMap<Card, { content: string; words?: number; characters?: number }>();

/** What is counted of `card`'s text as it is now (forgotten when the text changes). */
function countsOf(card: Card): { content: string; words?: number; characters?: number } {
  let known = counted.get(card);
  if (!known || known.content !== card.content) counted.set(card, (known = { content: card.content }));
  return known;
}

/** A card's words, computed once per text. */
export function cardWords(card: Card): number {
  const known = countsOf(card);
  return (known.words ??= countWords(card.content));
}

/**
 * A card's characters, computed once per text: the subtree's count after every key read them
 * all again (`normalize` on each of a big subtree's cards; issue 27).
 */
export function cardCharacters(card: Card): number {
  const known = countsOf(card);
  return (known.characters ??= countCharacters(card.content));
}

export function sumWords(cards: Iterable<Card>): number {
  let total = 0;
  for (const card of cards) total += cardWords(card);
  return total;
}

/** Lower case, accents off: "Élan" finds "elan". */
export function normalise(text: string): string {
  return text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}

/**
 * The cards whose text holds every word of `query`, in tree order, and the set to show: the
 * matches and their ancestors (a match must be reachable from the first column).
 */
export function searchCards(state: TreeReader, query: string): { matches: Card[]; shown: Set<string> } {
  const terms = normalise(query).split(/\s+/).filter(Boolean);
  const matches: Card[] = [];
  const shown = new Set<string>();
  if (terms.length === 0) return { matches, shown };
  for (const { card } of state.treeOrder()) {
    const text = normalise(card.content);
    if (!terms.every((term) => text.includes(term))) continue;
    matches.push(card);
    for (let id: string | null = card._id; id && !shown.has(id); id = state.get(id)?.parentId ?? null) shown.add(id);
  }
  return { matches, shown };
}
