/**
 * A per-request cache of each tree's live cards, so that a query of any depth (cards,
 * children of children, parents, depths) reads a tree's cards from the store once, however
 * many Card fields ask. Everything here is computed in one pass over that list, which the
 * domain hands over already in tree order with each card's depth (`orderedCardsOfTree`).
 *
 * Mutations call `forget` for the tree they changed, so fields read after a mutation in the
 * same request see the change. Every load records the tree's revision first, for the
 * result cache (src/graphql/result-dependencies.ts).
 */
import type { DomainContext } from "../domain/context.js";
import type { Actor } from "../domain/policy.js";
import { presentCard, presentTree } from "../domain/presenters.js";
import type { Card, StoredCard, Tree } from "../shared/records.js";
import { loadTree, orderedCardsOfTree } from "../domain/trees.js";
import type { OrderedCard } from "../shared/tree-order.js";
import type { ResultDependencies } from "./result-dependencies.js";

export interface LoadedTree {
  tree: Tree;
  /** Tree order. */
  cards: Card[];
  byId: Map<string, Card>;
  /** Children of each card id in sibling order; the `null` key holds the first column. */
  children: Map<string | null, Card[]>;
  /** 1 for a first-column card. */
  depth: Map<string, number>;
}

/** One pass over cards already in tree order: siblings come in sibling order, so no sort. */
function index(tree: Tree, ordered: readonly OrderedCard<StoredCard>[]): LoadedTree {
  const cards: Card[] = [];
  const byId = new Map<string, Card>();
  const children = new Map<string | null, Card[]>();
  const depth = new Map<string, number>();
  for (const entry of ordered) {
    const card = presentCard(entry.card);
    cards.push(card);
    byId.set(card._id, card);
    depth.set(card._id, entry.depth);
    const siblings = children.get(card.parentId);
    if (siblings) siblings.push(card);
    else children.set(card.parentId, [card]);
  }
  return { tree: presentTree(tree), cards, byId, children, depth };
}

export class TreeCards {
  private readonly loaded = new Map<string, Promise<LoadedTree>>();
  /** The same trees once loaded, so fields can answer without a promise. */
  private readonly ready = new Map<string, LoadedTree>();

  constructor(
    private readonly ctx: DomainContext,
    private readonly actor: Actor | null,
    private readonly dependencies: ResultDependencies,
  ) {}

  /**
   * The cards of `tree`. Only for a tree that came out of a domain call which already
   * allowed this caller to read it (a query or a mutation's result).
   */
  ofTree(tree: Tree): Promise<LoadedTree> {
    return this.remember(tree._id, async () => {
      this.dependencies.tree(tree._id);
      return index(tree, await orderedCardsOfTree(this.ctx, tree));
    });
  }

  /**
   * The cards of the tree `card` belongs to. When that tree is not loaded yet, the domain
   * loads it and checks that this caller may read it.
   * @throws the policy's errors when the caller may not read the card's tree.
   */
  ofCard(card: Card): Promise<LoadedTree> {
    return this.remember(card.treeId, async () => {
      this.dependencies.tree(card.treeId);
      const tree = await loadTree(this.ctx, this.actor, card.treeId, "read");
      return index(tree, await orderedCardsOfTree(this.ctx, tree));
    });
  }

  /**
   * `pick` applied to the tree of `card`: synchronously when the tree is loaded already.
   * A whole-tree query asks this for every card, and graphql-js resolves a plain value far
   * faster than a promise (measured: 315 ms → about 130 ms a query on 10k cards).
   * @throws the policy's errors when the caller may not read the card's tree.
   */
  withCardTree<T>(card: Card, pick: (loaded: LoadedTree) => T): T | Promise<T> {
    const loaded = this.ready.get(card.treeId);
    return loaded ? pick(loaded) : this.ofCard(card).then(pick);
  }

  /** Cards a domain call has just returned with their tree, in tree order (the public read). */
  prime(tree: Tree, ordered: readonly OrderedCard<StoredCard>[]): void {
    if (!this.loaded.has(tree._id)) this.remember(tree._id, async () => index(tree, ordered));
  }

  /** Drops what is known of a tree after a mutation changed it. */
  forget(treeId: string): void {
    this.loaded.delete(treeId);
    this.ready.delete(treeId);
  }

  private remember(treeId: string, load: () => Promise<LoadedTree>): Promise<LoadedTree> {
    let entry = this.loaded.get(treeId);
    if (!entry) {
      const pending = load();
      entry = pending;
      this.loaded.set(treeId, pending);
      pending.then((loaded) => {
        if (this.loaded.get(treeId) === pending) this.ready.set(treeId, loaded);
      }, () => undefined);
      // A failed load is not cached: the next field tries again and reports its own error.
      entry.catch(() => {
        if (this.loaded.get(treeId) === entry) this.loaded.delete(treeId);
      });
    }
    return entry;
  }
}
