/**
 * Loads a tree's cards for the tree page. In a browser with workers, the request runs in a
 * dedicated worker (workers/cards-worker.ts) and the cards arrive in slices of their JSON
 * text, each parsed by a task of its own here, so opening a 100,000-card tree never holds
 * the page for the whole parse (issue 27). Elsewhere (no Worker, the worker's file missing, a test in Node)
 * it is the API client's ordinary `cards()`. Errors are the API client's: an `ApiError` for an
 * answer that is not 2xx, a `NetworkError` when the server cannot be reached.
 */
import { errorFrom, NetworkError, type ApiClient, type Card } from "../api.js";
import { IndexedCards } from "./indexed-cards.js";

/** The worker's file, named by the build (scripts/build-web.mjs); empty when built without one. */
declare const __CARDTREE_CARDS_WORKER__: string;

export interface CardsRequest {
  url: string;
  headers: Record<string, string>;
}

export type CardsMessage =
  /**
   * A slice of the answer's text, as JSON arrays of cards (workers/cards-worker.ts, `CardCutter`);
   * `total` null while the server did not say how many cards are coming.
   */
  | { type: "text"; texts: string[]; total: number | null }
  | { type: "cards"; cards: Card[]; total: number }
  /** `revision`: the tree revision the server read the list at (X-Cards-Revision), null when it did not say. */
  | { type: "done"; total: number; revision: number | null }
  | { type: "failed"; status: number; body: string; retryAfter: string | null }
  | { type: "network" };

function workerUrl(): string {
  return typeof __CARDTREE_CARDS_WORKER__ === "string" ? __CARDTREE_CARDS_WORKER__ : "";
}

/** A worker started ahead of the request (prepareCards). */
export interface CardsLoader {
  /**
   * Asks for the cards now, in tree order; `progress` is told how many arrived of how many
   * (null: not known yet). At most once. The cards are indexed as they arrive (model/indexed-cards.ts).
   */
  load(progress?: (loaded: number, total: number | null) => void): Promise<IndexedCards>;
  /** Not needed after all: the worker goes. */
  cancel(): void;
}

/**
 * Starts the worker now and asks for the cards when `load` is called: the worker's script
 * is then fetched while the page waits for what must come before the cards (the tree page
 * reads the tree's revision first), not after it, which saves a round trip on a slow network.
 */
export function prepareCards(api: ApiClient, treeId: string): CardsLoader {
  const url = workerUrl();
  let worker: Worker | null = null;
  if (typeof Worker !== "undefined" && url !== "") {
    try {
      worker = new Worker(url, { name: "cards" });
    } catch {
      worker = null;
    }
  }
  const cards = new IndexedCards();
  // The ordinary request's list, indexed once it is whole.
  const whole = () =>
    api.cardsAt(treeId).then(({ cards: list, revision }) => {
      const indexed = IndexedCards.of(list);
      indexed.revision = revision;
      return indexed;
    });
  let startFailed = false;
  let unreadable = false;
  let waiting: { resolve(cards: IndexedCards | Promise<IndexedCards>): void; reject(error: unknown): void; progress?: (loaded: number, total: number | null) => void } | null = null;
  const finish = (outcome: (w: NonNullable<typeof waiting>) => void) => {
    worker?.terminate();
    const current = waiting;
    waiting = null;
    if (current) outcome(current);
  };
  worker?.addEventListener("message", (event: MessageEvent<CardsMessage>) => {
    const message = event.data;
    if (message.type === "text") {
      if (unreadable) return;
      for (const text of message.texts) {
        let slice: unknown;
        try {
          slice = JSON.parse(text);
        } catch {
          slice = null;
        }
        if (!Array.isArray(slice)) {
          // Cut where it should not have been (an answer of another shape): the list is read here instead.
          unreadable = true;
          finish((w) => w.resolve(whole()));
          return;
        }
        for (const card of slice as Card[]) cards.add(card);
      }
      waiting?.progress?.(cards.length, message.total);
    } else if (message.type === "cards") {
      for (const card of message.cards) cards.add(card);
      waiting?.progress?.(cards.length, message.total);
    } else if (message.type === "done") {
      cards.revision = message.revision;
      finish((w) => w.resolve(cards));
    } else if (message.type === "network") {
      finish((w) => w.reject(new NetworkError()));
    } else {
      const response = new Response(message.body, { status: message.status, headers: message.retryAfter ? { "Retry-After": message.retryAfter } : {} });
      void errorFrom(response).then((error) => finish((w) => w.reject(error)));
    }
  });
  // The worker's script could not run (not served, refused): the ordinary request instead.
  worker?.addEventListener("error", (event) => {
    event.preventDefault();
    startFailed = true;
    finish((w) => w.resolve(whole()));
  });
  return {
    load(progress) {
      if (!worker || startFailed) return whole();
      return new Promise<IndexedCards>((resolve, reject) => {
        waiting = { resolve, reject, progress };
        const request: CardsRequest = {
          url: `/api/trees/${encodeURIComponent(treeId)}/cards`,
          headers: { Accept: "application/json", "X-Requested-With": "XMLHttpRequest" },
        };
        worker!.postMessage(request);
      });
    },
    cancel() {
      worker?.terminate();
      waiting = null;
    },
  };
}
