/**
 * The tree's card list, as the server sends it, cut into JSON arrays of a few thousand cards
 * between cards, without parsing it (workers/cards-worker.ts; issue 27).
 */
/**
 * Where one card ends and the next begins in the server's card list: `},{"_id":"`. The
 * sequence cannot occur inside a JSON string (its quotes would be escaped there, and a string
 * that ended at the `"` after `{` could not be followed by `_id`), so between flat objects
 * whose first key is `_id` (src/domain/presenters.ts presentCard) it is exactly the boundary.
 */
const BETWEEN_CARDS = '},{"_id":"';

/**
 * The card list's text as JSON arrays of up to `size` cards each, and how many cards in all;
 * null when the text is not an array of cards the boundary can cut (then it is parsed whole).
 * A slice that still does not parse on the page makes the page read the list itself.
 */
export function cardSlices(text: string, size: number): { slices: string[]; total: number } | null {
  const body = text.trim();
  if (!body.startsWith("[") || !body.endsWith("]")) return null;
  if (/^\[\s*\]$/.test(body)) return { slices: [], total: 0 };
  if (!body.startsWith('[{"_id":"')) return null;
  // Where each card after the first starts (at its `{`).
  const starts = [1];
  for (let at = body.indexOf(BETWEEN_CARDS, 1); at >= 0; at = body.indexOf(BETWEEN_CARDS, at + BETWEEN_CARDS.length)) starts.push(at + 2);
  const slices: string[] = [];
  for (let i = 0; i < starts.length; i += size) {
    const end = i + size < starts.length ? starts[i + size] - 1 : body.length - 1;
    slices.push(`[${body.slice(starts[i], end)}]`);
  }
  return { slices, total: starts.length };
}
