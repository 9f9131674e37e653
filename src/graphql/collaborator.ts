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

export const CollaboratorType = builder.objectRef<Collaborator>("Collaborator").implement({
  description: "A user with access to a tree.",
  fields: (t) => ({
    id: t.exposeID("_id"),
    email: t.exposeString("email"),
    owner: t.exposeBoolean("owner"),
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
      context.budget.spent ? null : context.budget.list(await listCollaborators(context.domain, requireUser(context), tree._id), info),
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
    resolve: (_root, args, context) => runValidated(context, requireUser(context), addCollaborator, { treeId: args.treeId }, args.input),
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
