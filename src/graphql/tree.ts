/**
 * The Tree type (its cards flat in tree order and its first column, both from the one
 * per-request load), `Card.tree`, the tree queries and the tree mutations.
 */
import { execute, runValidated } from "./commands.js";
import { presentTree } from "../domain/presenters.js";
import type { Tree } from "../shared/records.js";
import { publicUrl, recordId } from "../shared/schemas.js";
import {
  clonePublicTree,
  cloneTree,
  createTree,
  deleteTree,
  findPublicTree,
  listTrees,
  loadTree,
  updateTree,
} from "../domain/trees.js";
import { builder } from "./builder.js";
import { CardType } from "./card.js";
import { requireUser } from "./context.js";
import { nullWhenHidden } from "./errors.js";
import { CreateTreeInput, UpdateTreeInput } from "./inputs.js";

export const TreeType = builder.objectRef<Tree>("Tree").implement({
  description: "A document: a tree of cards.",
  fields: (t) => ({
    id: t.exposeID("_id"),
    version: t.exposeInt("__v", {
      description: "REST's `__v`: starts at 0, +1 on every change of the tree record (GraphQL names cannot start with __).",
    }),
    revision: t.int({
      description: "The tree's change counter (SPEC §10): +1 on every change of the tree or any of its cards.",
      resolve: (tree) => tree.revision ?? 0,
    }),
    name: t.exposeString("name"),
    owner: t.exposeID("owner", { description: "The owner's user id." }),
    users: t.exposeIDList("users", { description: "Ids of everyone with access, the owner included." }),
    createdAt: t.exposeString("createdAt"),
    updatedAt: t.exposeString("updatedAt", { description: "Also moves when any of its cards changes." }),
    latex: t.exposeBoolean("latex", { nullable: true, description: "null when never set." }),
    publicUrl: t.exposeString("publicUrl", { nullable: true, description: "null for a private tree." }),
    cards: t.field({
      type: [CardType],
      description: "Every live card, flat, in tree order (depth-first pre-order).",
      resolve: async (tree, _args, context, info) => {
        const snapshot = await context.trees.snapshotOf(tree);
        if (context.splices?.write("cards", snapshot, context.budget, info)) return [];
        return context.budget.list(snapshot.places().cards, info);
      },
    }),
    roots: t.field({
      type: [CardType],
      description: "The first column, in sibling order.",
      resolve: async (tree, _args, context, info) => {
        const snapshot = await context.trees.snapshotOf(tree);
        if (context.splices?.write("roots", snapshot, context.budget, info)) return [];
        return context.budget.list(snapshot.places().children.get(null) ?? [], info);
      },
    }),
  }),
});

builder.objectField(CardType, "tree", (t) =>
  t.field({
    type: TreeType,
    resolve: async (card, _args, context, info) => context.budget.one((await context.trees.ofCard(card)).tree, info),
  }),
);

builder.queryFields((t) => ({
  trees: t.field({
    type: [TreeType],
    description: "Trees the caller can open, most recently updated first.",
    resolve: async (_root, _args, context, info) =>
      context.budget.list((await listTrees(context.domain, requireUser(context))).map(presentTree), info),
  }),
  tree: t.field({
    type: TreeType,
    nullable: true,
    description: "A tree the caller can open; null when it does not exist or they may not (anonymous callers included).",
    args: { id: t.arg.id({ required: true, validate: recordId }) },
    resolve: async (_root, args, context, info) => {
      if (context.budget.spent) return null;
      const tree = await nullWhenHidden(async () => presentTree(await loadTree(context.domain, context.user, args.id, "read")));
      return tree && context.budget.one(tree, info);
    },
  }),
  publicTree: t.field({
    type: TreeType,
    nullable: true,
    description: "A public tree by its publicUrl, for anyone; null unless it is public.",
    args: { url: t.arg.string({ required: true, validate: publicUrl }) },
    resolve: async (_root, args, context, info) => {
      if (context.budget.spent) return null;
      const found = await nullWhenHidden(async () => presentTree(await findPublicTree(context.domain, context.user, args.url)));
      return found && context.budget.one(found, info);
    },
  }),
}));

builder.mutationFields((t) => ({
  createTree: t.field({
    type: TreeType,
    args: { input: t.arg({ type: CreateTreeInput, required: true }) },
    resolve: async (_root, { input }, context) => presentTree(await runValidated(context, requireUser(context), createTree, {}, input)),
  }),
  updateTree: t.field({
    type: TreeType,
    description: "Renames, sets latex, or publishes (publicUrl, owner only).",
    args: { id: t.arg.id({ required: true, validate: recordId }), input: t.arg({ type: UpdateTreeInput, required: true }) },
    resolve: async (_root, args, context) => {
      return presentTree(await runValidated(context, requireUser(context), updateTree, { treeId: args.id }, args.input));
    },
  }),
  deleteTree: t.id({
    description: "Deletes the tree and all its cards (owner only); returns its id.",
    args: { id: t.arg.id({ required: true, validate: recordId }) },
    resolve: async (_root, args, context) => {
      await execute(context.domain, requireUser(context), deleteTree, { treeId: args.id }, undefined);
      return args.id;
    },
  }),
  cloneTree: t.field({
    type: TreeType,
    description: 'A full copy owned by the caller, named "<name> (copy)", with no collaborators and no publicUrl.',
    args: { id: t.arg.id({ required: true, validate: recordId }) },
    resolve: async (_root, args, context) => presentTree(await execute(context.domain, requireUser(context), cloneTree, { treeId: args.id }, undefined)),
  }),
  clonePublicTree: t.field({
    type: TreeType,
    description: "Copies a public tree, named by its id or its publicUrl.",
    args: { idOrUrl: t.arg.string({ required: true }) },
    resolve: async (_root, args, context) =>
      presentTree(await execute(context.domain, requireUser(context), clonePublicTree, { idOrUrl: args.idOrUrl }, undefined)),
  }),
}));
