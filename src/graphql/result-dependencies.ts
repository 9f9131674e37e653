/**
 * What one GraphQL execution's result was computed from, for the result cache
 * (src/graphql/result-cache.ts): the revision of every tree it read
 * (src/domain/tree-revisions.ts), and whether it also depended on something no revision
 * tracks, which makes the result uncacheable.
 *
 * The rule for resolvers: call `tree(id)` BEFORE reading that tree's record or cards.
 * Revisions move after a write reached the store, so a revision read before the records
 * can only be older than what was read, never newer: a cached result labelled with it is
 * at worst dropped once too often, never served stale.
 */
import type { TreeRevisions } from "../domain/tree-revisions.js";

export class ResultDependencies {
  private readonly trees = new Map<string, number>();
  private tracked = true;

  constructor(private readonly revisions: TreeRevisions) {}

  /** Records the tree's revision now, unless an earlier read of it was recorded already. */
  tree(treeId: string): void {
    if (!this.trees.has(treeId)) this.trees.set(treeId, this.revisions.current(treeId));
  }

  /**
   * The result depends on something no revision tracks: a tree that was not found (its
   * creation moves no revision), a public address that names no tree.
   */
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
}
