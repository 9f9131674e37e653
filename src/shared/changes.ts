/**
 * Changes (SPEC §10): every write to a tree is one change, numbered by the tree's
 * `revision`. The store keeps them (the change log), the feed publishes them, and history,
 * restore, conditional writes, live streams and the read caches are all derived from them.
 */
import type { StoredCard, Tree } from "./records.js";

/**
 * The header every REST write to a tree answers with: the revision its change made, so a
 * client knows which change is its own (the browser's undo reverts exactly those).
 */
export const TREE_REVISION_HEADER = "X-Tree-Revision";
/**
 * The revision a tree's card list (`GET /api/trees/:treeId/cards`) was read at. Not
 * X-Tree-Revision, which says a write made that revision (the page's undo takes it as its own).
 */
export const CARDS_REVISION_HEADER = "X-Cards-Revision";

/** The revision an X-Cards-Revision value says, or null when it says none (absent, or not a revision). */
export function cardsRevision(value: string | null): number | null {
  const revision = value === null || value === "" ? NaN : Number(value);
  return Number.isSafeInteger(revision) && revision >= 0 ? revision : null;
}

export const changeKinds = [
  "tree.create",
  "tree.update",
  "tree.share",
  "card.create",
  "card.update",
  "card.move",
  "card.delete",
  "import",
  "restore.card",
  "restore.tree",
  /** The inverse of one earlier change (an undo, or a redo: the revert of a revert). */
  "revert",
] as const;
export type ChangeKind = (typeof changeKinds)[number];

export interface Change {
  treeId: string;
  /** The tree's revision after this change: 1 for the tree's creation, then +1 each. */
  revision: number;
  at: string;
  /** Who made it; null for the system (the command line acting as operator). */
  userId: string | null;
  kind: ChangeKind;
  /** The cards it touched, as they were; a card of `after` missing here was created by it. */
  before: StoredCard[];
  /** The cards it touched, as they are now; a deleted card is here with `trashed` set. */
  after: StoredCard[];
  /** The tree record before and after, when the change touched the tree's own fields. */
  tree?: { before: Tree | null; after: Tree };
}
