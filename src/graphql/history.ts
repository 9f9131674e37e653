/**
 * History (SPEC §10) in GraphQL: `Tree.history`, `Tree.trash`, `Card.versions`, and the
 * `restoreTree`, `restoreCard` and `revertChange` mutations, over the same domain commands as
 * REST.
 */
import { execute } from "./commands.js";
import {
  cardVersions,
  restoreCard,
  restoreTree,
  revertChange,
  treeHistory,
  treeTrash,
  type CardVersion,
  type HistoryEntry,
  type TrashEntry,
} from "../domain/history.js";
import { presentCard, presentTree } from "../domain/presenters.js";
import { changeKinds } from "../shared/changes.js";
import { HISTORY_PAGE_MAX, recordId } from "../shared/schemas.js";
import { builder } from "./builder.js";
import { CardType } from "./card.js";
import { requireUser } from "./context.js";
import { TreeType } from "./tree.js";
import { shapeOf, TreeChangeType, type TreeChangeShape } from "./tree-change.js";

const ChangeKindEnum = builder.enumType("ChangeKind", {
  description: "What a change did.",
  values: Object.fromEntries(changeKinds.map((kind) => [kind.replace(".", "_").toUpperCase(), { value: kind }])),
});

const ChangeType = builder.objectRef<HistoryEntry>("Change").implement({
  description: "One write to a tree (SPEC §10), numbered by the tree's revision.",
  fields: (t) => ({
    revision: t.exposeInt("revision"),
    at: t.exposeString("at"),
    userId: t.exposeID("userId", { nullable: true, description: "Who made it; null for the operator (command line)." }),
    kind: t.field({ type: ChangeKindEnum, resolve: (entry) => entry.kind }),
    cardIds: t.exposeIDList("cardIds", { description: "The cards it touched." }),
    titles: t.exposeStringList("titles", { description: "Each of cardIds' cards named by its first words, as the change left it (as it was, for a card it deleted)." }),
  }),
});

const CardVersionType = builder.objectRef<CardVersion>("CardVersion").implement({
  description: "A card as one change left it.",
  fields: (t) => ({
    version: t.exposeInt("__v", { description: "REST's `__v`." }),
    content: t.exposeString("content"),
    at: t.exposeString("at"),
    userId: t.exposeID("userId", { nullable: true }),
  }),
});

const TrashEntryType = builder.objectRef<TrashEntry>("TrashEntry").implement({
  description: "A deleted subtree, by its root card.",
  fields: (t) => ({
    card: t.field({ type: CardType, resolve: (entry) => entry.card }),
    count: t.exposeInt("count", { description: "Cards deleted with it, itself included." }),
    at: t.exposeString("at", { description: "When it was deleted." }),
    userId: t.exposeID("userId", { nullable: true, description: "Who deleted it; null when no longer known." }),
  }),
});

builder.objectFields(TreeType, (t) => ({
  history: t.field({
    type: [ChangeType],
    description: `The tree's changes, newest first: revisions below \`before\` (all when null), at most \`limit\` (default 50, at most ${HISTORY_PAGE_MAX}).`,
    args: { before: t.arg.int(), limit: t.arg.int() },
    resolve: (tree, args, context) =>
      treeHistory(context.domain, context.user, tree._id, { before: args.before ?? undefined, limit: args.limit ?? undefined }),
  }),
  trash: t.field({
    type: [TrashEntryType],
    description: "Deleted subtrees, newest first.",
    resolve: (tree, _args, context) => treeTrash(context.domain, context.user, tree._id),
  }),
}));

builder.objectField(CardType, "versions", (t) =>
  t.field({
    type: [CardVersionType],
    description: `The card's versions, newest first, at most \`limit\` (default 50, at most ${HISTORY_PAGE_MAX}).`,
    args: { limit: t.arg.int() },
    resolve: (card, args, context) =>
      cardVersions(context.domain, context.user, card.treeId, card._id, { limit: args.limit ?? undefined }),
  }),
);

const RevertResultType = builder.objectRef<{ revision: number; change: TreeChangeShape | null }>("RevertResult").implement({
  description: "What reverting a change did.",
  fields: (t) => ({
    revision: t.exposeInt("revision", { description: "The tree's revision now: the revert's own, when it wrote one." }),
    change: t.field({
      type: TreeChangeType,
      nullable: true,
      description: "The revert (kind `revert`), as the live stream shows it; null when the tree already was as the revert would leave it.",
      resolve: (result) => result.change,
    }),
  }),
});

builder.mutationFields((t) => ({
  revertChange: t.field({
    type: RevertResultType,
    description:
      "Reverts one change as a new change of kind `revert` (an undo; the revert of a revert is a redo). Error `conflict` (details.changed) when its cards changed since, unless `force`.",
    args: {
      treeId: t.arg.id({ required: true, validate: recordId }),
      revision: t.arg.int({ required: true }),
      force: t.arg.boolean({ description: "Revert even cards changed since (default false)." }),
      together: t.arg.intList({ description: "More changes to revert with it, as the same one new change (one undo step's writes)." }),
    },
    resolve: async (_root, args, context) => {
      const { tree, change } = await execute(context.domain, requireUser(context), revertChange, { treeId: args.treeId }, {
        revision: args.revision,
        force: args.force ?? undefined,
        together: args.together ?? undefined,
      });
      return { revision: tree.revision ?? 0, change: change ? shapeOf({ type: "change", change }) : null };
    },
  }),
  restoreTree: t.field({
    type: TreeType,
    description: "Brings the tree back to how it was after `revision`, as a new change (nothing is erased).",
    args: { id: t.arg.id({ required: true, validate: recordId }), revision: t.arg.int({ required: true }) },
    resolve: async (_root, args, context) => {
      return presentTree(await execute(context.domain, requireUser(context), restoreTree, { treeId: args.id }, { revision: args.revision }));
    },
  }),
  restoreCard: t.field({
    type: [CardType],
    description: "Brings a deleted card back with the subtree deleted with it; returns those cards in tree order.",
    args: { treeId: t.arg.id({ required: true, validate: recordId }), id: t.arg.id({ required: true, validate: recordId }) },
    resolve: async (_root, args, context, info) => {
      const cards = await execute(context.domain, requireUser(context), restoreCard, { treeId: args.treeId, cardId: args.id }, undefined);
      return context.budget.list(cards.map(presentCard), info);
    },
  }),
}));
