/**
 * Collaborators: who shares a tree (`Tree.collaborators`) and the owner's mutations to add
 * and remove them; a collaborator may remove only themself (leave the tree).
 */
import { execute, runValidated } from "./commands.js";
import { addCollaborator, listCollaborators, removeCollaborator, type Collaborator } from "../domain/collaborators.js";
import { recordId, userId } from "../shared/schemas.js";
import { builder } from "./builder.js";
import { requireUser } from "./context.js";
import { AddCollaboratorInput } from "./inputs.js";
import { TreeType } from "./tree.js";

/** A user's place on one tree: the same user on two trees is two collaborators. */
type TreeCollaborator = Collaborator & { treeId: string };

const onTree = (treeId: string) => (collaborator: Collaborator): TreeCollaborator => ({ ...collaborator, treeId });

export const CollaboratorType = builder.objectRef<TreeCollaborator>("Collaborator").implement({
  description: "A user with access to one tree. The same user on two trees is two collaborators, each with its own id and `owner`.",
  fields: (t) => ({
    id: t.id({
      description: "This user on this tree (`<treeId>:<userId>`), so a normalized client cache keeps each tree's `owner` apart.",
      resolve: (c) => `${c.treeId}:${c._id}`,
    }),
    userId: t.exposeID("_id", { description: "The user's id (REST's collaborator `_id`; removeCollaborator's `userId`)." }),
    treeId: t.exposeID("treeId"),
    email: t.exposeString("email"),
    owner: t.exposeBoolean("owner", { description: "Whether this user owns this tree." }),
  }),
});

builder.objectField(TreeType, "collaborators", (t) =>
  t.field({
    type: [CollaboratorType],
    // Nullable: someone reading a public tree they are not a member of sees the tree but
    // not who shares it; they get null here with the error, and the rest of the tree.
    nullable: true,
    description: "Owner first, then in the order they were added. Members only.",
    resolve: async (tree, _args, context, info) =>
      context.budget.spent
        ? null
        : context.budget.list((await listCollaborators(context.domain, requireUser(context), tree._id)).map(onTree(tree._id)), info),
  }),
);

builder.mutationFields((t) => ({
  addCollaborator: t.field({
    type: CollaboratorType,
    description: "Gives an existing user access to the tree (owner only).",
    args: {
      treeId: t.arg.id({ required: true, validate: recordId }),
      input: t.arg({ type: AddCollaboratorInput, required: true }),
    },
    resolve: async (_root, args, context) =>
      onTree(args.treeId)(await runValidated(context, requireUser(context), addCollaborator, { treeId: args.treeId }, args.input)),
  }),
  removeCollaborator: t.id({
    description: "Removes a collaborator (owner), or leaves the tree (a collaborator removing themself). Returns the user id.",
    args: {
      treeId: t.arg.id({ required: true, validate: recordId }),
      userId: t.arg.id({ required: true, validate: userId }),
    },
    resolve: async (_root, args, context) => {
      await execute(context.domain, requireUser(context), removeCollaborator, { treeId: args.treeId, userId: args.userId }, undefined);
      return args.userId;
    },
  }),
}));
