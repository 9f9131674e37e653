/**
 * A dedicated worker that fetches a tree's cards (`GET /api/trees/:treeId/cards`) off the
 * page's main thread (issue 27: a 100,000-card list is ~35 MB of JSON). The answer goes back
 * to the page as slices of its JSON text, cut between cards as the text arrives
 * (`CardCutter`), which the page parses one slice a task while the rest is still on its way
 * (issue 27: the page's parse no longer waits for the last byte). A string crosses to the page
 * as one copy, where the cards as objects crossed as a structured clone that cost the page
 * about what parsing them does, after the worker had parsed them once already. An answer that cannot be cut that way is
 * parsed here and posted as objects in slices. Built by scripts/build-web.mjs as a hashed
 * file of its own; the page side is model/card-loader.ts.
 */
/// <reference lib="webworker" />
import type { CardsMessage, CardsRequest } from "../model/card-loader.js";
import { CardCutter } from "../model/card-slices.js";
import { CARDS_REVISION_HEADER, cardsRevision } from "../../shared/changes.js";

declare const self: DedicatedWorkerGlobalScope;

/** Cards per message: a slice the page takes in within a few milliseconds. */
const SLICE = 2_000;
/**
 * Cards per string of a message's text: a string of ~35,000 characters (70 KB as UTF-16) is
 * made in the page's young generation and goes at its next scavenge; 2,000 cards' 700,000
 * characters went straight to the old one, and 35 MB of them made the page collect its whole
 * heap during the first keys after the open.
 */
const PIECE = 100;

self.addEventListener("message", (event: MessageEvent<CardsRequest>) => {
  void load(event.data);
});

async function load({ url, headers }: CardsRequest): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, { headers, credentials: "same-origin" });
  } catch {
    return post({ type: "network" });
  }
  if (!response.ok || !response.body) {
    let text: string;
    try {
      text = await response.text();
    } catch {
      return post({ type: "network" });
    }
    if (!response.ok) return post({ type: "failed", status: response.status, body: text, retryAfter: response.headers.get("Retry-After") });
    return parsed(text, revisionOf(response));
  }
  // Cut as it arrives: the page parses the first cards while the rest is still coming. How
  // many cards there are is the server's X-Card-Count (src/rest/card-routes.ts), when sent.
  const cutter = new CardCutter(PIECE);
  const revision = revisionOf(response);
  const counted = Number(response.headers.get("X-Card-Count") ?? "");
  const total = response.headers.has("X-Card-Count") && Number.isSafeInteger(counted) && counted >= 0 ? counted : null;
  const per = SLICE / PIECE;
  let pending: string[] = [];
  const send = (pieces: string[] | null, last: boolean) => {
    if (pieces) pending = pending.length === 0 ? pieces : pending.concat(pieces);
    while (pending.length >= per || (last && pending.length > 0)) {
      post({ type: "text", texts: pending.slice(0, per), total: last ? cutter.count : total });
      pending = pending.slice(per);
    }
  };
  try {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      send(cutter.push(value), false);
    }
  } catch {
    return post({ type: "network" });
  }
  const whole = cutter.whole;
  if (whole !== null) return parsed(whole, revision);
  const rest = cutter.end();
  if (!rest) return post({ type: "failed", status: 502, body: "", retryAfter: null });
  send(rest, true);
  post({ type: "done", total: cutter.count, revision });
}

/** The tree revision the list is at (the server's X-Cards-Revision), or null when not said. */
function revisionOf(response: Response): number | null {
  return cardsRevision(response.headers.get(CARDS_REVISION_HEADER));
}

/** An answer the cut does not apply to: parsed here and posted as objects. */
function parsed(text: string, revision: number | null): void {
  let cards: unknown;
  try {
    cards = JSON.parse(text);
  } catch {
    return post({ type: "failed", status: 502, body: "", retryAfter: null });
  }
  if (!Array.isArray(cards)) return post({ type: "failed", status: 502, body: "", retryAfter: null });
  for (let from = 0; from < cards.length; from += SLICE) post({ type: "cards", cards: cards.slice(from, from + SLICE), total: cards.length });
  post({ type: "done", total: cards.length, revision });
}

function post(message: CardsMessage): void {
  self.postMessage(message);
}
