/**
 * Who may do what to a tree: the matrix of SPEC §3, decided here and nowhere else.
 * Deny is the default. A tree the caller may not open is reported as not found, never as
 * forbidden, so that its existence does not leak; anonymous callers are asked to sign in.
 */
import { ForbiddenError, NotFoundError, UnauthenticatedError } from "../shared/errors.js";
import type { Tree } from "../shared/records.js";

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
  | "clonePublic"
  /** Read a tree through its public address (`/api/public/:publicUrl`, GraphQL `publicTree`). */
  | "readPublic"
  /** Remove oneself from the tree's collaborators. */
  | "leave"
  /** Follow the tree's changes live (SSE, GraphQL subscription): reading, and public trees for anyone. */
  | "watch"
  /** Be shown, and see who else is, on the tree (presence): collaborators only, never public readers. */
  | "presence";

/**
 * Who is acting: a signed-in user, or the operator of the machine through the CLI (the
 * system actor), who may do anything a tree's owner may. A system actor's `_id` is never a
 * user id (those are 24 hexadecimal characters), so records it writes name it honestly.
 */
export interface Actor {
  _id: string;
  system?: true;
}

export const SYSTEM_ACTOR: Actor = Object.freeze({ _id: "system", system: true });

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
  readPublic: { user: true, anonymous: true },
  leave: { user: false, anonymous: false },
  watch: { user: true, anonymous: true },
  presence: { user: false, anonymous: false },
};

/** Whether `actor` (null: anonymous) may do `action` to `tree`. */
export function can(actor: Actor | null, action: TreeAction, tree: Tree): boolean {
  if (actor?.system) return true;
  switch (action) {
    case "administer":
      return isOwner(actor, tree);
    case "leave":
      // The owner cannot leave: the tree would have nobody to administer it.
      return isMember(actor, tree) && !isOwner(actor, tree);
    case "readPublic":
      // Only what is public is at a public address, members included.
      return isPublic(tree);
  }
  if (isMember(actor, tree)) return true;
  if (!isPublic(tree)) return false;
  return actor === null ? PUBLIC_ACTIONS[action].anonymous : PUBLIC_ACTIONS[action].user;
}

/**
 * Throws unless `actor` may do `action` to `tree`.
 * @throws UnauthenticatedError for an anonymous caller who would need to sign in.
 * @throws NotFoundError when the tree is missing or the caller may not see it.
 * @throws ForbiddenError when the caller sees the tree but lacks the right (a collaborator
 *   doing what only the owner may, the owner leaving).
 */
export function authorizeTree(actor: Actor | null, action: TreeAction, tree: Tree | null): Tree {
  if (tree && can(actor, action, tree)) return tree;
  // A public address is for everyone, signed in or not: what is not public there is missing.
  if (action === "readPublic") throw new NotFoundError("Public tree");
  if (actor === null) throw new UnauthenticatedError();
  if (tree && isMember(actor, tree)) {
    throw new ForbiddenError(
      action === "leave" ? "The owner cannot leave their own tree; delete it instead." : "Only the tree's owner may do this.",
    );
  }
  throw new NotFoundError("Tree");
}

/**
 * Account administration (adding users while sign-up is closed, setting passwords and card
 * limits, listing every user) is the operator's alone: the system actor, never a user.
 * @throws ForbiddenError for anyone else.
 */
export function authorizeOperator(actor: Actor | null): void {
  if (!actor?.system) throw new ForbiddenError("Only the server's operator may do this.");
}

/** Whether `actor` may create an account now: anyone while sign-up is open, else the operator. */
export function maySignUp(actor: Actor | null, signupOpen: boolean): boolean {
  return signupOpen || actor?.system === true;
}

/**
 * A user's own script is theirs alone: nobody else may read, change or run it, the operator
 * included (it is code run in that user's pages). Another user's script is not found.
 * @throws UnauthenticatedError for an anonymous caller; NotFoundError for anyone but its owner.
 */
export function authorizeScript<S extends { userId: string }>(actor: Actor | null, script: S | null): S {
  if (actor === null) throw new UnauthenticatedError();
  if (!script || actor.system || script.userId !== actor._id) throw new NotFoundError("Script");
  return script;
}

/**
 * A user's own settings (their appearance preferences) are theirs: only they, or the
 * operator, may read or change them.
 * @throws UnauthenticatedError for an anonymous caller; ForbiddenError for anyone else.
 */
export function authorizeOwnAccount(actor: Actor | null, userId: string): void {
  if (actor === null) throw new UnauthenticatedError();
  if (actor._id !== userId && !actor.system) throw new ForbiddenError("Only the user may see or change their own settings.");
}
