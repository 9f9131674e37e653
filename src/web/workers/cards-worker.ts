/**
 * A dedicated worker that fetches a tree's cards (`GET /api/trees/:treeId/cards`) and parses
 * the answer off the page's main thread (issue 27: a 100,000-card list is ~35 MB of JSON, a
 * parse of several hundred milliseconds that froze the page). The cards go back to the page in
 * slices (`CardsMessage`), each a task of its own there, so no one task holds the page long.
 * Built by scripts/build-web.mjs as a hashed file of its own; the page side is
 * model/card-loader.ts.
 */
/// <reference lib="webworker" />
import type { CardsMessage, CardsRequest } from "../model/card-loader.js";

declare const self: DedicatedWorkerGlobalScope;

/** Cards per message: a slice the page takes in within a few milliseconds. */
const SLICE = 2_000;

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
