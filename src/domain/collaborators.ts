/**
 * Sharing a tree: the owner adds and removes collaborators; a collaborator may leave.
 */
import type { z } from "zod";
import type { Ports } from "./context.js";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "../shared/errors.js";
import { USER_ID } from "../shared/ids.js";
import type { Actor } from "./policy.js";
import type { collaboratorRecord } from "../shared/record-schemas.js";
import type { StoredUser, Tree } from "../shared/records.js";
import { addCollaboratorInput, noInput } from "../shared/schemas.js";
import { commitChange } from "./changes.js";
import { treeCommand } from "./command.js";
import { loadTree } from "./tree-access.js";

export type Collaborator = z.infer<typeof collaboratorRecord>;

function presentCollaborators(tree: Tree, users: StoredUser[]): Collaborator[] {
  const byId = new Map(users.map((u) => [u._id, u]));
  // Owner first, then in the order they were added.
  const ids = [tree.owner, ...tree.users.filter((id) => id !== tree.owner)];
  return ids
    .map((id) => byId.get(id))
    .filter((u): u is StoredUser => u !== undefined)
    .map((u) => ({ _id: u._id, email: u.email, owner: u._id === tree.owner }));
}

export async function listCollaborators(ctx: Ports<"store">, actor: Actor, treeId: string): Promise<Collaborator[]> {
  const tree = await loadTree(ctx, actor, treeId, "listCollaborators");
  return presentCollaborators(tree, await ctx.store.users.byIds(tree.users));
}

/**
 * Gives an existing user access to the tree. Owner only.
 * @throws ValidationError, NotFoundError (no such user), ConflictError (already has access).
 */
export const addCollaborator = treeCommand({
  name: "addCollaborator",
  needs: ["store", "clock", "feed"],
  input: addCollaboratorInput,
  action: "administer",
  async run(ctx, actor, tree, _target: { treeId: string }, { email }): Promise<Collaborator> {
    const user = await ctx.store.users.byEmail(email);
    if (!user) throw new NotFoundError("A user with this email");
    if (tree.users.includes(user._id)) throw new ConflictError("This user already has access to the tree.");
    await commitChange(ctx, actor, tree, { kind: "tree.share", tree: { ...tree, users: [...tree.users, user._id], __v: tree.__v + 1 } });
    return { _id: user._id, email: user.email, owner: false };
  },
  async replay(ctx, change) {
    const before = new Set(change.tree?.before?.users ?? []);
    const added = change.tree?.after.users.find((id) => !before.has(id));
    const user = added === undefined ? null : await ctx.store.users.byId(added);
    if (!user) throw new NotFoundError("A user with this email");
    return { _id: user._id, email: user.email, owner: false };
  },
});

/**
 * Removes a collaborator: the owner may remove anyone but themself; a collaborator may
 * remove only themself (leave).
 * @throws ValidationError, NotFoundError, ForbiddenError.
 */
export const removeCollaborator = treeCommand({
  name: "removeCollaborator",
  needs: ["store", "clock", "feed"],
  input: noInput,
  action: (_input, { userId }: { treeId: string; userId: string }, actor) => (userId === actor._id ? "leave" : "administer"),
  precheck(_ctx, { userId }: { treeId: string; userId: string }) {
    if (!USER_ID.test(userId)) {
      throw new ValidationError("The user id is not valid.", [{ path: "userId", message: "must be 24 lowercase hexadecimal characters" }]);
    }
  },
  async run(ctx, actor, tree, { userId }: { treeId: string; userId: string }): Promise<void> {
    if (!tree.users.includes(userId)) throw new NotFoundError("Collaborator");
    if (userId === tree.owner) throw new ForbiddenError("The owner cannot be removed.");
    await commitChange(ctx, actor, tree, {
      kind: "tree.share",
      tree: { ...tree, users: tree.users.filter((id) => id !== userId), __v: tree.__v + 1 },
    });
  },
  replay: () => undefined,
});
