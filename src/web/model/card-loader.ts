/**
 * Loads a tree's cards for the tree page. In a browser with workers, the request and the JSON
 * parse run in a dedicated worker (workers/cards-worker.ts) and the cards arrive in slices,
 * each taken in by a task of its own, so opening a 100,000-card tree never holds the page for
 * the whole parse (issue 27). Elsewhere (no Worker, the worker's file missing, a test in Node)
 * it is the API client's ordinary `cards()`. Errors are the API client's: an `ApiError` for an
 * answer that is not 2xx, a `NetworkError` when the server cannot be reached.
 */
import { errorFrom, NetworkError, type ApiClient, type Card } from "../api.js";

/** The worker's file, named by the build (scripts/build-web.mjs); empty when built without one. */
declare const __CARDTREE_CARDS_WORKER__: string;

export interface CardsRequest {
  url: string;
  headers: Record<string, string>;
}

export type CardsMessage =
  | { type: "cards"; cards: Card[]; total: number }
  | { type: "done"; total: number }
  | { type: "failed"; status: number; body: string; retryAfter: string | null }
  | { type: "network" };

function workerUrl(): string {
  return typeof __CARDTREE_CARDS_WORKER__ === "string" ? __CARDTREE_CARDS_WORKER__ : "";
}

/** The tree's cards in tree order; `progress` is told how many have arrived of how many. */
export function loadCards(api: ApiClient, treeId: string, progress?: (loaded: number, total: number) => void): Promise<Card[]> {
  const url = workerUrl();
  if (typeof Worker === "undefined" || url === "") return api.cards(treeId);
  return new Promise<Card[]>((resolve, reject) => {
    let worker: Worker;
    try {
      worker = new Worker(url, { name: "cards" });
    } catch {
      resolve(api.cards(treeId));
      return;
    }
    const cards: Card[] = [];
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      worker.terminate();
      outcome();
    };
    worker.addEventListener("message", (event: MessageEvent<CardsMessage>) => {
      const message = event.data;
      if (message.type === "cards") {
        for (const card of message.cards) cards.push(card);
        progress?.(cards.length, message.total);
      } else if (message.type === "done") {
        finish(() => resolve(cards));
      } else if (message.type === "network") {
        finish(() => reject(new NetworkError()));
      } else {
        const response = new Response(message.body, { status: message.status, headers: message.retryAfter ? { "Retry-After": message.retryAfter } : {} });
        void errorFrom(response).then((error) => finish(() => reject(error)));
      }
    });
    // The worker's script could not run (not served, refused): the ordinary request instead.
    worker.addEventListener("error", (event) => {
      event.preventDefault();
      finish(() => resolve(api.cards(treeId)));
    });
    const request: CardsRequest = {
      url: `/api/trees/${encodeURIComponent(treeId)}/cards`,
      headers: { Accept: "application/json", "X-Requested-With": "XMLHttpRequest" },
    };
    worker.postMessage(request);
  });
}
