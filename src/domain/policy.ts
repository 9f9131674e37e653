/**
 * Who may do what to a tree: the matrix of SPEC §3, decided here and nowhere else.
 * Deny is the default. A tree the caller may not open is reported as not found, never as
 * forbidden, so that its existence does not leak; anonymous callers are asked to sign in.
 */
import { ForbiddenError, NotFoundError, UnauthenticatedError } from "./errors.js";
import type { Tree } from "./records.js";

export type TreeAction =
  /** Read the tree record and its cards. */
  | "read"
  /** Export the tree. */
  | "export"
  /** See the collaborators' emails. */
  | "listCollaborators"
  /** Create, modify or delete cards, import, rename, set latex. */
  | "write"
  /** Set publicUrl, add or remove collaborators, delete the tree. */
  | "administer"
  /** Copy the tree through /clone. */
  | "clone"
  /** Copy the tree through /clonePublic. */
  | "clonePublic";

export interface Actor {
  _id: string;
}

export function isMember(actor: Actor | null, tree: Tree): boolean {
  return actor !== null && tree.users.includes(actor._id);
}

export function isOwner(actor: Actor | null, tree: Tree): boolean {
  return actor !== null && tree.owner === actor._id;
}

export function isPublic(tree: Tree): boolean {
  return tree.publicUrl !== undefined;
}

/** What a caller who is not a member may still do to a public tree. */
const PUBLIC_ACTIONS: Record<TreeAction, { user: boolean; anonymous: boolean }> = {
  read: { user: true, anonymous: false },
  export: { user: true, anonymous: true },
  listCollaborators: { user: false, anonymous: false },
  write: { user: false, anonymous: false },
  administer: { user: false, anonymous: false },
  clone: { user: false, anonymous: false },
  clonePublic: { user: true, anonymous: false },
};

/** Whether `actor` (null: anonymous) may do `action` to `tree`. */
export function can(actor: Actor | null, action: TreeAction, tree: Tree): boolean {
  if (action === "administer") return isOwner(actor, tree);
  if (isMember(actor, tree)) return true;
  if (!isPublic(tree)) return false;
  return actor === null ? PUBLIC_ACTIONS[action].anonymous : PUBLIC_ACTIONS[action].user;
}

/**
 * Throws unless `actor` may do `action` to `tree`.
 * @throws UnauthenticatedError for an anonymous caller who would need to sign in.
 * @throws NotFoundError when the tree is missing or the caller may not see it.
 * @throws ForbiddenError when the caller sees the tree but lacks the right (a collaborator
 *   doing what only the owner may).
 */
export function authorizeTree(actor: Actor | null, action: TreeAction, tree: Tree | null): Tree {
  if (tree && can(actor, action, tree)) return tree;
  if (actor === null) throw new UnauthenticatedError();
  if (tree && isMember(actor, tree)) {
    throw new ForbiddenError("Only the tree's owner may do this.");
  }
  throw new NotFoundError("Tree");
}
