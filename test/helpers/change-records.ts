/**
 * Records for tests that hand changes to a store directly (the PostgreSQL group commit and
 * its lone statement): a tree, a card of it, and the change that brings a tree to a revision.
 */
import type { Store } from "../../src/domain/ports/store.js";
import type { Change } from "../../src/shared/changes.js";
import { newRecordId, newUserId } from "../../src/shared/ids.js";
import type { StoredCard, Tree } from "../../src/shared/records.js";

export const at = (): string => new Date().toISOString();

/** A tree at revision 1, shared with a second user. */
export function newTree(name: string): Tree {
  const owner = newUserId();
  const now = at();
  return { __v: 0, _id: newRecordId(), createdAt: now, updatedAt: now, name, owner, users: [owner, newUserId()], revision: 1 };
}

export function cardOf(tree: Tree, content: string, id = newRecordId()): StoredCard {
  const now = at();
  return { _id: id, treeId: tree._id, parentId: null, content, position: 0, createdAt: now, updatedAt: now, __v: 0 };
}

/** The change taking `tree` to `revision` (its creation at 1), with the tree as it is after. */
export function changeOf(tree: Tree, revision: number, after: StoredCard[], before: StoredCard[] = []): { change: Change; tree: Tree } {
  const now = at();
  return {
    change: { treeId: tree._id, revision, at: now, userId: tree.owner, kind: revision === 1 ? "tree.create" : "card.create", before, after },
    tree: { ...tree, revision, updatedAt: now },
  };
}

/** Trees created one at a time through `store` (revision 1 each), so what a test commits next is what it measures. */
export async function createdTrees(store: Pick<Store, "changes">, count: number): Promise<Tree[]> {
  const trees: Tree[] = [];
  for (let i = 0; i < count; i++) {
    const created = changeOf(newTree(`Tree ${i}`), 1, []);
    await store.changes.commit(created.change, created.tree);
    trees.push(created.tree);
  }
  return trees;
}
