/**
 * A dedicated worker that fetches a tree's cards (`GET /api/trees/:treeId/cards`) off the
 * page's main thread (issue 27: a 100,000-card list is ~35 MB of JSON). The answer goes back
 * to the page as slices of its JSON text, cut between cards (`cardSlices`), which the page
 * parses one slice a task: a string crosses to the page as one copy, where the cards as
 * objects crossed as a structured clone that cost the page about what parsing them does,
 * after the worker had parsed them once already. An answer that cannot be cut that way is
 * parsed here and posted as objects in slices. Built by scripts/build-web.mjs as a hashed
 * file of its own; the page side is model/card-loader.ts.
 */
/// <reference lib="webworker" />
import type { CardsMessage, CardsRequest } from "../model/card-loader.js";
import { cardSlices } from "../model/card-slices.js";

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
  let text: string;
  try {
    text = await response.text();
  } catch {
    return post({ type: "network" });
  }
  if (!response.ok) {
    return post({ type: "failed", status: response.status, body: text, retryAfter: response.headers.get("Retry-After") });
  }
  const sliced = cardSlices(text, PIECE);
  if (sliced) {
    const per = SLICE / PIECE;
    for (let i = 0; i < sliced.slices.length; i += per) post({ type: "text", texts: sliced.slices.slice(i, i + per), total: sliced.total });
    return post({ type: "done", total: sliced.total });
  }
  let cards: unknown;
  try {
    cards = JSON.parse(text);
  } catch {
    return post({ type: "failed", status: 502, body: "", retryAfter: null });
  }
  if (!Array.isArray(cards)) return post({ type: "failed", status: 502, body: "", retryAfter: null });
  for (let from = 0; from < cards.length; from += SLICE) post({ type: "cards", cards: cards.slice(from, from + SLICE), total: cards.length });
  post({ type: "done", total: cards.length });
}

function post(message: CardsMessage): void {
  self.postMessage(message);
}
