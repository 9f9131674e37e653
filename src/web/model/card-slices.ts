/**
 * The tree's card list, as the server sends it, cut into JSON arrays of a few cards between
 * cards, without parsing it (workers/cards-worker.ts; issue 27). The cut is made as the text
 * arrives (`CardCutter`), so the page parses the first cards while the rest is on its way.
 */
/**
 * Where one card ends and the next begins in the server's card list: `},{"_id":"`. The
 * sequence cannot occur inside a JSON string (its quotes would be escaped there, and a string
 * that ended at the `"` after `{` could not be followed by `_id`), so between flat objects
 * whose first key is `_id` (src/domain/presenters.ts presentCard) it is exactly the boundary.
 */
const BETWEEN_CARDS = '},{"_id":"';
/** How the list begins when the cut applies: an array whose first card's first key is `_id`. */
const FIRST_CARD = '[{"_id":"';

/**
 * Cuts the card list's text into JSON arrays of `size` cards as it arrives, chunk by chunk
 * (a boundary may fall across two chunks). `push` answers the arrays that are whole so far;
 * `end` the last one. Text that does not begin as a list of cards the boundary can cut is not
 * cut at all: `push` and `end` answer null from then on, and `whole` is everything read, to be
 * parsed in one piece. An array that still does not parse on the page makes the page read the
 * list itself (model/card-loader.ts).
 */
export class CardCutter {
  /** What is not cut yet: from the first uncut card's `{` on, once the list is known to be cards. */
  private text = "";
  /** Where each uncut card starts in `text`; the last one may not be whole yet. */
  private starts: number[] = [];
  /** Where the search for the next boundary resumes in `text`. */
  private scanned = 0;
  private shape: "unknown" | "cards" | "other" = "unknown";
  /** Everything read, kept only while the shape is not known, or when it is another one. */
  private read: string[] = [];
  private cut = 0;

  constructor(private readonly size: number) {}

  /** Cards in the arrays answered so far. */
  get count(): number {
    return this.cut;
  }

  /** The whole text read, for a list the cut does not apply to (null when it did apply). */
  get whole(): string | null {
    return this.shape === "cards" ? null : this.read.join("");
  }

  push(chunk: string): string[] | null {
    if (this.shape === "other") {
      this.read.push(chunk);
      return null;
    }
    if (this.shape === "unknown") {
      this.read.push(chunk);
      const start = this.read.join("").trimStart();
      if (start.length < FIRST_CARD.length) return FIRST_CARD.startsWith(start) ? [] : this.other();
      if (!start.startsWith(FIRST_CARD)) return this.other();
      this.shape = "cards";
      this.read = [];
      this.text = start.slice(1);
      this.starts = [0];
      this.scanned = 1;
    } else {
      this.text += chunk;
    }
    const text = this.text;
    let from = this.scanned;
    for (let at = text.indexOf(BETWEEN_CARDS, from); at >= 0; at = text.indexOf(BETWEEN_CARDS, from)) {
      this.starts.push(at + 2);
      from = at + BETWEEN_CARDS.length;
    }
    // A boundary begun at the end of this chunk is found once the next one completes it.
    this.scanned = Math.max(from, text.length - (BETWEEN_CARDS.length - 1));
    return this.take(false);
  }

  /** The rest, once the text is all read; null when the text did not end as a list of cards. */
  end(): string[] | null {
    if (this.shape !== "cards") return null;
    const rest = this.text.trimEnd();
    if (!rest.endsWith("]")) return null;
    this.text = rest.slice(0, -1);
    return this.take(true);
  }

  /** The whole arrays of `size` cards (and, at the end, the rest), dropped from `text`. */
  private take(last: boolean): string[] {
    const pieces: string[] = [];
    const starts = this.starts;
    // The last card begun is whole only at the end.
    const whole = last ? starts.length : starts.length - 1;
    let i = 0;
    for (; i + this.size <= whole; i += this.size) {
      const next = i + this.size;
      pieces.push(`[${this.text.slice(starts[i], next < starts.length ? starts[next] - 1 : this.text.length)}]`);
    }
    if (last && i < whole) {
      pieces.push(`[${this.text.slice(starts[i])}]`);
      i = whole;
    }
    this.cut += i;
    if (last) {
      this.text = "";
      this.starts = [];
    } else if (i > 0) {
      const offset = starts[i];
      this.text = this.text.slice(offset);
      this.starts = starts.slice(i).map((start) => start - offset);
      this.scanned -= offset;
    }
    return pieces;
  }

  private other(): null {
    this.shape = "other";
    return null;
  }
}
