/**
 * The Card type with its place in the tree (children, parent, depth: all computed from the
 * tree's cards as loaded once for the request), the `card` query and the card mutations.
 */
import { runValidated } from "./commands.js";
import { createCard, getCard, updateCard } from "../domain/cards.js";
import { NotFoundError } from "../shared/errors.js";
import { importSeed } from "../domain/import.js";
import { presentCard } from "../domain/presenters.js";
import type { Card } from "../shared/records.js";
import { cardVersion, recordId } from "../shared/schemas.js";
import { builder } from "./builder.js";
import { requireUser } from "./context.js";
import { nullWhenHidden } from "./errors.js";
import { CreateCardInput, SeedInput, UpdateCardInput } from "./inputs.js";

export const CardType = builder.objectRef<Card>("Card");

CardType.implement({
  description: "A card: Markdown text with a parent (or none: the first column) and a position among its siblings.",
  fields: (t) => ({
    id: t.exposeID("_id"),
    treeId: t.exposeID("treeId"),
    parentId: t.exposeID("parentId", { nullable: true }),
    content: t.string({ resolve: (card, _args, context) => context.budget.text(card.content) }),
    position: t.exposeFloat("position", { description: "Siblings are ordered by position, then createdAt, then id." }),
    createdAt: t.exposeString("createdAt"),
    updatedAt: t.exposeString("updatedAt"),
    version: t.int({
      description: "REST's `__v`: the card's version, 0 when created, +1 on every change of it.",
      resolve: (card) => card.__v ?? 0,
    }),
    children: t.field({
      type: [CardType],
      description: "In sibling order.",
      resolve: (card, _args, context, info) =>
        context.trees.withCardTree(card, (loaded) => context.budget.list(loaded.children.get(card._id) ?? [], info)),
    }),
    parent: t.field({
      type: CardType,
      nullable: true,
      description: "null for a first-column card.",
      resolve: (card, _args, context, info) => {
        const parentId = card.parentId;
        if (parentId === null || context.budget.spent) return null;
        return context.trees.withCardTree(card, (loaded) => context.budget.one(loaded.byId.get(parentId) ?? null, info));
      },
    }),
    depth: t.int({
      description: "The column the card stands in: 1 for the first column.",
      resolve: (card, _args, context) =>
        context.trees.withCardTree(card, (loaded) => {
          const depth = loaded.depth.get(card._id);
          // Only a card removed since it was read (in this same request) has no place.
          if (depth === undefined) throw new NotFoundError("Card");
          return depth;
        }),
    }),
  }),
});

builder.queryField("card", (t) =>
  t.field({
    type: CardType,
    nullable: true,
    description: "A live card of a tree the caller can read; null otherwise.",
    args: { id: t.arg.id({ required: true, validate: recordId }) },
    resolve: (_root, args, context, info) =>
      context.budget.spent
        ? null
        : nullWhenHidden(async () => context.budget.one(presentCard(await getCard(context.domain, context.user, args.id)), info)),
  }),
);

builder.mutationFields((t) => ({
  createCard: t.field({
    type: CardType,
    args: { input: t.arg({ type: CreateCardInput, required: true }) },
    resolve: async (_root, { input }, context) => {
      return presentCard(await runValidated(context, requireUser(context), createCard, { treeId: input.treeId }, input));
    },
  }),
  updateCard: t.field({
    type: CardType,
    description: "Changes content, position and/or parent (no cycles).",
    args: {
      treeId: t.arg.id({ required: true, validate: recordId }),
      id: t.arg.id({ required: true, validate: recordId }),
      input: t.arg({ type: UpdateCardInput, required: true }),
      version: t.arg.int({ validate: cardVersion, description: "The card's version you read; a stale one is `conflict` (the card as it is in extensions.details.current)." }),
    },
    resolve: async (_root, args, context) => {
      return presentCard(
        await runValidated(context, requireUser(context), updateCard, { treeId: args.treeId, cardId: args.id, version: args.version ?? undefined }, args.input),
      );
    },
  }),
  importSeed: t.field({
    type: [CardType],
    description: "Imports Markdown or JSON cards under a parent, all or nothing; returns the new cards in tree order.",
    args: {
      treeId: t.arg.id({ required: true, validate: recordId }),
      input: t.arg({ type: SeedInput, required: true }) },
    resolve: async (_root, args, context, info) => {
      const cards = await runValidated(context, requireUser(context), importSeed, { treeId: args.treeId }, args.input);
      return context.budget.list(cards.map(presentCard), info);
    },
  }),
}));
