/**
 * A tree page's requests: the user's trees (the tree's record and revision among them) and
 * the tree's cards, both at once. The cards come through the worker of model/card-loader.ts,
 * made now, and say which revision they were read at (`X-Cards-Revision`); the live stream
 * resumes after the tree record's revision, so the two must be of one revision. When they are
 * not (a write came between the two reads) or the cards do not say, the cards are asked for
 * again once the tree list has answered, which makes them at least as new as its revision,
 * as the page always did before it asked for both at once (issue 27: one round trip before
 * the first card, not two; on a phone's network that round trip was LCP's).
 *
 * The page's boot (main.ts) starts them beside `GET /api/index` when the address is a tree's
 * and a session may exist, and hands them to the tree page it then shows. Started for nobody
 * (no session after all, another page shown), they are cancelled.
 *
 * The device's database (the user this browser last saw) is opened beside them: a tree page
 * uses it either way, and offline it is where the tree comes from once the requests failed,
 * which then need not wait for its opening too (20-80 ms on a busy machine; issue 26). When
 * the browser says it is offline, the tree's copy (SPEC §13) is read from it at once.
 */
import type { ApiClient, Tree } from "../api.js";
import type { DeviceStore, TreeCopy } from "../offline/outbox.js";
import { prepareCards } from "./card-loader.js";
import type { IndexedCards } from "./indexed-cards.js";

export interface TreeFetch {
  readonly treeId: string;
  /** The user's trees, as `GET /api/trees` answers. */
  readonly trees: Promise<Tree[]>;
  /**
   * The cards, of the revision of the tree's record in `trees` (asked for again after `trees`
   * when the first answer was of another); `progress` is told how many arrived of how many.
   */
  cards(progress?: (loaded: number, total: number | null) => void): Promise<IndexedCards>;
  /** Not needed after all: the cards are not asked for, or stop coming. */
  cancel(): void;
  /** The tree's copy in `store` (null: none), read when asked, or already when the fetch began offline. */
  deviceCopy(store: DeviceStore): Promise<TreeCopy | null>;
}

/** `device`: the store of the user this browser last saw, whose copy is read at once offline. */
export function fetchTree(api: ApiClient, treeId: string, device: DeviceStore | null = null): TreeFetch {
  const offline = typeof navigator !== "undefined" && navigator.onLine === false;
  const early = device && offline ? device.loadTree(treeId) : null;
  if (early) early.catch(() => undefined);
  else device?.open();
  let loader = prepareCards(api, treeId);
  let progress: ((loaded: number, total: number | null) => void) | undefined;
  let cancelled = false;
  const report = (loaded: number, total: number | null) => progress?.(loaded, total);
  const trees = api.trees();
  const first = loader.load(report);
  const cards = Promise.all([trees, first]).then(([list, loaded]): Promise<IndexedCards> | IndexedCards => {
    const tree = list.find((t) => t._id === treeId);
    // Not in the list: the page says so, whatever the cards were.
    if (!tree || loaded.revision === (tree.revision ?? 0)) return loaded;
    if (cancelled) return new Promise<IndexedCards>(() => undefined);
    loader = prepareCards(api, treeId);
    return loader.load(report);
  });
  // Whoever takes them sees the failures; started for nobody, they are not unhandled.
  trees.catch(() => undefined);
  first.catch(() => undefined);
  cards.catch(() => undefined);
  return {
    treeId,
    trees,
    cards(told) {
      progress = told;
      return cards;
    },
    cancel() {
      cancelled = true;
      loader.cancel();
    },
    deviceCopy(store) {
      return early && store === device ? early : store.loadTree(treeId);
    },
  };
}
