/**
 * The only way records become API output (REST JSON and GraphQL alike): private fields
 * (password hash, trash state, author) never leave, optional tree fields are absent when
 * unset, and fields come in a stable order. The shapes are the schemas of record-schemas.ts.
 */
import type { z } from "zod";
import type { userView } from "../shared/record-schemas.js";
import type { Card, StoredCard, StoredUser, Tree, TreeView } from "../shared/records.js";

export type UserView = z.infer<typeof userView>;

export function presentUser(
  user: StoredUser,
  live: { treeIds: ReadonlySet<string>; cardsCount: number },
  csrf: string,
): UserView {
  return {
    _id: user._id,
    email: user.email,
    limit: user.limit,
    hasBillingId: false,
    createdAt: user.createdAt,
    treesCount: live.treeIds.size,
    cardsCount: live.cardsCount,
    // A favourite the user can no longer open (deleted, or access removed) is not shown.
    favoriteTrees: user.favoriteTrees.filter((id) => live.treeIds.has(id)),
    randomIndex: user.randomIndex,
    userHash: user.userHash,
    offers: {},
    csrf,
  };
}

export function presentTree(tree: Tree): TreeView {
  const view: TreeView = {
    __v: tree.__v,
    revision: tree.revision ?? 0,
    _id: tree._id,
    createdAt: tree.createdAt,
    updatedAt: tree.updatedAt,
    name: tree.name,
    owner: tree.owner,
    users: [...tree.users],
  };
  if (tree.latex !== undefined) view.latex = tree.latex;
  if (tree.publicUrl !== undefined) view.publicUrl = tree.publicUrl;
  return view;
}

export function presentCard(card: StoredCard): Card {
  return {
    _id: card._id,
    treeId: card.treeId,
    parentId: card.parentId,
    content: card.content,
    position: card.position,
    createdAt: card.createdAt,
    updatedAt: card.updatedAt,
    __v: card.__v ?? 0,
  };
}
