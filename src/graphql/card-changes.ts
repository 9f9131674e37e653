/**
 * Card mutations whose answer carries everything they changed (issue 28), so a client's
 * normalized cache (Apollo's InMemoryCache, urql's graphcache) reads the server's truth
 * without a refetch: `moveCard` (the card, the parent it left, the tree) and `deleteCard`
 * (the ids to evict, the parent that lost the card, the tree). `createCard` and
 * `updateCard` answer the Card, whose `parent { children }` and `tree { revision cards }`
 * are the rest of what they changed.
 */
import { deleteCard, getCard, updateCard } from "../domain/cards.js";
import { changeTheLastStepReplayed, changeTheNextStepReplays } from "../domain/idempotency.js";
import { presentCard, presentTree } from "../domain/presenters.js";
import { loadTree } from "../domain/trees.js";
import type { Card, Tree } from "../shared/records.js";
import { cardVersion, recordId } from "../shared/schemas.js";
import { builder } from "./builder.js";
import { CardType } from "./card.js";
import { execute } from "./commands.js";
import { requireUser, type GraphQLContext } from "./context.js";
import { nullWhenHidden } from "./errors.js";
import { TreeType } from "./tree.js";

/** What a card mutation changed besides the card: the tree after it and one parent's children. */
interface CardsChanged {
  treeId: string;
  /** The parent whose children changed besides the card's own (its old one on a move); null: the first column. */
  parentId: string | null;
}

async function treeAfter(context: GraphQLContext, treeId: string): Promise<Tree> {
  return presentTree(await loadTree(context.domain, requireUser(context), treeId, "read"));
}

async function liveParent(context: GraphQLContext, parentId: string | null): Promise<Card | null> {
  return parentId === null ? null : nullWhenHidden(async () => presentCard(await getCard(context.domain, context.user, parentId)));
}

const DeleteCardResult = builder.objectRef<CardsChanged & { deleted: string[] }>("DeleteCardResult").implement({
  description:
    "What deleteCard changed: the ids now in the trash (to evict), the tree after it and the parent whose children lost the card, so cached lists read the server's truth without a refetch.",
  fields: (t) => ({
    deleted: t.exposeIDList("deleted", { description: "The card and its whole subtree, in tree order." }),
    tree: t.field({ type: TreeType, description: "The tree after the deletion: its revision, cards and roots.", resolve: (r, _a, context) => treeAfter(context, r.treeId) }),
    parent: t.field({
      type: CardType,
      nullable: true,
      description: "The deleted card's parent, without it among its children; null when it stood in the first column (see tree.roots).",
      resolve: (r, _a, context) => liveParent(context, r.parentId),
    }),
  }),
});

const MoveCardResult = builder.objectRef<CardsChanged & { card: Card }>("MoveCardResult").implement({
  description: "What moveCard changed: the card in its new place (its `parent` has it among its children), the parent it left, and the tree after it.",
  fields: (t) => ({
    card: t.field({ type: CardType, resolve: (r) => r.card }),
    from: t.field({
      type: CardType,
      nullable: true,
      description: "The parent the card left, without it among its children; null when it came from the first column (see tree.roots).",
      resolve: (r, _a, context) => liveParent(context, r.parentId),
    }),
    tree: t.field({ type: TreeType, description: "The tree after the move: its revision, cards and roots.", resolve: (r, _a, context) => treeAfter(context, r.treeId) }),
  }),
});

builder.mutationFields((t) => ({
  moveCard: t.field({
    type: MoveCardResult,
    description: "Moves a card (with its subtree) under another parent or to the first column, at a position among its new siblings. Returns both parents' and the tree's new state.",
    args: {
      treeId: t.arg.id({ required: true, validate: recordId }),
      id: t.arg.id({ required: true, validate: recordId }),
      parentId: t.arg.id({ description: "The new parent; null or left out: the first column." }),
      position: t.arg.float({ required: true, description: "Among the new siblings." }),
      version: t.arg.int({ validate: cardVersion, description: "The card's version you read; a stale one is `conflict`." }),
    },
    resolve: async (_root, args, context) => {
      const user = requireUser(context);
      // A retry answering from the move's committed change: the card as it was is in the change.
      const replayed = changeTheNextStepReplays()?.before.find((card) => card._id === args.id);
      const read = replayed ?? (await getCard(context.domain, user, args.id));
      const target = { treeId: args.treeId, cardId: args.id, version: args.version ?? undefined };
      const card = await execute(context.domain, user, updateCard, target, { parentId: args.parentId ?? null, position: args.position });
      // Or learned only as the move committed (a key claimed at commit): the card as it was is in that change.
      const before = changeTheLastStepReplayed()?.before.find((c) => c._id === args.id) ?? read;
      const from = before.parentId === card.parentId ? null : before.parentId;
      return { card: presentCard(card), treeId: args.treeId, parentId: from };
    },
  }),
  deleteCard: t.field({
    type: DeleteCardResult,
    description: "Moves the card and its whole subtree to the tree's trash.",
    args: {
      treeId: t.arg.id({ required: true, validate: recordId }),
      id: t.arg.id({ required: true, validate: recordId }),
      version: t.arg.int({ validate: cardVersion, description: "The card's version you read; a stale one is `conflict`." }),
    },
    resolve: async (_root, args, context) => {
      const user = requireUser(context);
      const target = { treeId: args.treeId, cardId: args.id, version: args.version ?? undefined };
      // Its parent before it goes: afterwards the card is in the trash, and not readable as live.
      const replayed = changeTheNextStepReplays()?.before.find((card) => card._id === args.id);
      const read = replayed ?? (await nullWhenHidden(() => getCard(context.domain, user, args.id)));
      const deleted = await execute(context.domain, user, deleteCard, target, undefined);
      const before = changeTheLastStepReplayed()?.before.find((card) => card._id === args.id) ?? read;
      return { deleted, treeId: args.treeId, parentId: before?.parentId ?? null };
    },
  }),
}));
