/**
 * A tree page's requests: the user's trees (the tree's revision among them), then the tree's
 * cards, in that order (the cards are then at least as new as the revision the live stream
 * resumes after). The cards come through the worker of model/card-loader.ts, made now so its
 * script is fetched beside the first request.
 *
 * The page's boot (main.ts) starts them beside `GET /api/index` when the address is a tree's
 * and a session may exist, and hands them to the tree page it then shows: on a phone's
 * network each request the page waited for before asking for the cards was a round trip
 * before the first card could be drawn (issue 27, Lighthouse's LCP). Started for nobody (no
 * session after all, another page shown), they are cancelled.
 */
import type { ApiClient, Tree } from "../api.js";
import { prepareCards } from "./card-loader.js";
import type { IndexedCards } from "./indexed-cards.js";

export interface TreeFetch {
  readonly treeId: string;
  /** The user's trees, as `GET /api/trees` answers. */
  readonly trees: Promise<Tree[]>;
  /** The cards, asked for once `trees` answered; `progress` is told how many arrived of how many. */
  cards(progress?: (loaded: number, total: number | null) => void): Promise<IndexedCards>;
  /** Not needed after all: the cards are not asked for, or stop coming. */
  cancel(): void;
}

export function fetchTree(api: ApiClient, treeId: string): TreeFetch {
  const loader = prepareCards(api, treeId);
  let progress: ((loaded: number, total: number | null) => void) | undefined;
  let cancelled = false;
  const trees = api.trees();
  const cards = trees.then((): Promise<IndexedCards> => {
    if (cancelled) return new Promise<IndexedCards>(() => undefined);
    return loader.load((loaded, total) => progress?.(loaded, total));
  });
  // Whoever takes them sees the failures; started for nobody, they are not unhandled.
  trees.catch(() => undefined);
  cards.catch(() => undefined);
  return {
    treeId,
    trees,
    cards(report) {
      progress = report;
      return cards;
    },
    cancel() {
      cancelled = true;
      loader.cancel();
    },
  };
}
