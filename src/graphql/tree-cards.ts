/**
 * A per-request cache of each tree's live cards, so that a query of any depth (cards,
 * children of children, parents, depths) reads a tree's cards from the store once, however
 * many Card fields ask. Everything here is computed from that one list with the domain's
 * tree-order functions.
 *
 * Mutations call `forget` for the tree they changed, so fields read after a mutation in the
 * same request see the change. Every load records the tree's revision first, for the
 * result cache (src/graphql/result-dependencies.ts).
 */
import { cardsOfTree } from "../domain/cards.js";
import type { DomainContext } from "../domain/context.js";
import type { Actor } from "../domain/policy.js";
import { presentCard, presentTree } from "../domain/presenters.js";
import type { Card, StoredCard, Tree } from "../domain/records.js";
import { loadTree } from "../domain/trees.js";
import { childrenByParent, walkTreeOrder } from "../domain/tree-order.js";
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

function index(tree: Tree, stored: readonly StoredCard[]): LoadedTree {
  const ordered = walkTreeOrder(stored.map(presentCard));
  const cards = ordered.map((entry) => entry.card);
  return {
    tree: presentTree(tree),
    cards,
    byId: new Map(cards.map((card) => [card._id, card])),
    children: childrenByParent(cards),
    depth: new Map(ordered.map((entry) => [entry.card._id, entry.depth])),
  };
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
      return index(tree, await cardsOfTree(this.ctx, tree));
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
      return index(tree, await cardsOfTree(this.ctx, tree));
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

  /** Cards a domain call has just returned with their tree (the public read). */
  prime(tree: Tree, cards: readonly StoredCard[]): void {
    if (!this.loaded.has(tree._id)) this.remember(tree._id, async () => index(tree, cards));
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
