/**
 * An in-process revision number per tree, moved after every write to the tree or its
 * cards. Whatever is derived from a tree's cards and kept between requests (the serialized
 * cards response of src/rest/cards-json-cache.ts) is valid only for the revision it was
 * read at. The tree's `updatedAt` cannot serve: it has millisecond resolution, so two
 * writes in one millisecond would share it, and `__v` deliberately ignores card changes.
 * One process owns a data directory (data/LOCK), so an in-process counter sees every write.
 */
export class TreeRevisions {
  private readonly revisions = new Map<string, number>();

  /** The tree's revision now. Read it BEFORE reading the cards it will label. */
  current(treeId: string): number {
    return this.revisions.get(treeId) ?? 0;
  }

  /** Called once a write's records are in the store (never before: see `withTree`). */
  bump(treeId: string): void {
    this.revisions.set(treeId, this.current(treeId) + 1);
  }
}
