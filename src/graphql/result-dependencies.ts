/**
 * What one GraphQL execution's result was computed from, for the result cache
 * (src/graphql/result-cache.ts), recorded below the resolvers: each request's domain context
 * gets a store that notes every read (`watchedStore`), so no resolver keeps this by hand.
 *
 * A read is tracked when a tree's revision says whether it is still current:
 * - a tree record (`trees.byId`, `trees.byPublicUrl`): the tree at the revision the record
 *   carries. Not finding one is untracked (a tree may yet be created, an address taken);
 * - a tree's live cards (`cards.liveByTree`) once its record was read in this request: the
 *   cards are at that revision or a later one, so the result is at worst dropped once too
 *   often, never served stale;
 * - the whole-tree reads of the read model, which are keyed by the record's revision.
 * Any other read (users, a user's trees, a card by id, the change log, sessions) and any
 * write is untracked, and so is a field that needs the signed-in user's record
 * (`requireUser`): the result is then not cached. A new store method is untracked until
 * a rule here says otherwise.
 */
import type { Store } from "../domain/ports/store.js";
import { FEED_EPOCH, type TreeRevisions } from "../domain/tree-revisions.js";

/** Looks at a read before it runs; returns what to note once its result is in. */
type Rule = (dependencies: ResultDependencies, args: unknown[]) => (result: unknown) => void;

const treeRecord: Rule = (dependencies) => (result) => {
  const tree = result as { _id: string; revision?: number } | null;
  if (tree) dependencies.tree(tree._id, tree.revision ?? 0);
  else dependencies.untracked();
};

const RULES: Record<string, Record<string, Rule>> = {
  trees: { byId: treeRecord, byPublicUrl: treeRecord },
  cards: {
    // Whether the record came first is decided before the cards are read.
    liveByTree: (dependencies, [treeId]) => {
      const afterItsRecord = dependencies.has(treeId as string);
      return () => {
        if (!afterItsRecord) dependencies.untracked();
      };
    },
  },
};

export class ResultDependencies {
  private readonly trees = new Map<string, number>();
  private tracked = true;

  /**
   * @param epoch the change feed's epoch when the execution starts (TreeRevisions.epoch):
   *   noted as a dependency of its own, so a result computed before the feed last missed
   *   notices from other processes (SPEC §11) is never served after.
   */
  constructor(epoch?: number) {
    if (epoch !== undefined) this.trees.set(FEED_EPOCH, epoch);
  }

  /** Records the tree at `revision`, unless an earlier read of it was recorded already. */
  tree(treeId: string, revision: number): void {
    if (!this.trees.has(treeId)) this.trees.set(treeId, revision);
  }

  has(treeId: string): boolean {
    return this.trees.has(treeId);
  }

  /** The result depends on something no tree revision tracks. */
  untracked(): void {
    this.tracked = false;
  }

  get cacheable(): boolean {
    return this.tracked;
  }

  /** Each tree read and the revision it was read at. */
  snapshot(): [treeId: string, revision: number][] {
    return [...this.trees];
  }

  /** Whether every tree the result was read from is still at that revision. */
  static current(dependencies: readonly (readonly [string, number])[], revisions: TreeRevisions): boolean {
    return dependencies.every(([treeId, revision]) => revisions.isCurrent(treeId, revision));
  }
}

/** `store` with every read noted in `dependencies` by the rules above. */
export function watchedStore(store: Store, dependencies: ResultDependencies): Store {
  const watched = (name: string, repository: object): object => {
    const rules = RULES[name] ?? {};
    return new Proxy(repository, {
      get(target, method, receiver) {
        const value: unknown = Reflect.get(target, method, receiver);
        if (typeof value !== "function" || typeof method !== "string") return value;
        const rule = rules[method];
        return async (...args: unknown[]) => {
          if (!rule) dependencies.untracked();
          const note = rule?.(dependencies, args);
          const result: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          note?.(result);
          return result;
        };
      },
    });
  };
  return {
    users: watched("users", store.users) as Store["users"],
    trees: watched("trees", store.trees) as Store["trees"],
    cards: watched("cards", store.cards) as Store["cards"],
    changes: watched("changes", store.changes) as Store["changes"],
    sessions: watched("sessions", store.sessions) as Store["sessions"],
    scripts: watched("scripts", store.scripts) as Store["scripts"],
    // Written around a mutation by the HTTP layer, never read by a resolver.
    idempotency: store.idempotency,
    status: () => store.status(),
    close: () => store.close(),
  };
}
