/**
 * `subscription { treeChanged(treeId, since) }` (SPEC §10): a tree's changes, served over
 * Server-Sent Events by yoga (a request with `Accept: text/event-stream`; GraphQL over SSE,
 * distinct connections). The stream is the domain's (src/domain/live.ts): the same
 * permissions, replay after `since` without gap or duplicate, then live, and the same
 * limits as REST's `/api/trees/:id/events`. A reader too far behind gets one TreeChange
 * with `reset: true` (the revision to reload at), then the subscription completes; a
 * reader who loses access, or whose tree is deleted, sees it complete.
 */
import { z } from "zod";
import { followTree, presentChange, type ChangeView, type LiveEvent, type LiveStream } from "../domain/live.js";
import type { TreeView } from "../shared/records.js";
import { recordId } from "../shared/schemas.js";
import { builder } from "./builder.js";
import { CardType } from "./card.js";
import { TreeType } from "./tree.js";

export type TreeChangeShape = Omit<ChangeView, "tree" | "at" | "kind"> & { at: string | null; kind: string; tree: TreeView | null; reset: boolean };

export const TreeChangeType = builder.objectRef<TreeChangeShape>("TreeChange").implement({
  description: "One change of a tree, as the live stream sends it; or, with `reset`, the order to reload.",
  fields: (t) => ({
    revision: t.exposeInt("revision", { description: "The tree's revision after this change; with `reset`, the revision to reload at." }),
    kind: t.exposeString("kind", {
      description: "tree.create, tree.update, tree.share, card.create, card.update, card.move, card.delete, import, restore.card, restore.tree, revert; `reset` for a reset.",
    }),
    at: t.exposeString("at", { nullable: true, description: "When it was made; null for a reset." }),
    userId: t.exposeID("userId", { nullable: true, description: "Who made it; null for the operator (command line) and for a reset." }),
    cards: t.field({
      type: [CardType],
      description: "The cards it created, edited, moved or restored, as they are after it. Their `children`, `parent` and `depth` are the tree's now.",
      resolve: (change, _args, context, info) => context.budget.list(change.cards, info),
    }),
    deleted: t.exposeIDList("deleted", { description: "Ids of the cards it sent to the trash." }),
    tree: t.field({
      type: TreeType,
      nullable: true,
      description: "The tree record after the change, when the change touched it (rename, sharing, publishing).",
      resolve: (change) => change.tree,
    }),
    reset: t.exposeBoolean("reset", { description: "The reader is too far behind: reload the tree, then subscribe again with `since: revision`." }),
  }),
});

export function shapeOf(event: LiveEvent): TreeChangeShape {
  if (event.type === "reset") {
    return { revision: event.revision, kind: "reset", at: null, userId: null, cards: [], deleted: [], tree: null, reset: true };
  }
  const view = presentChange(event.change);
  return { ...view, tree: view.tree ?? null, reset: false };
}

/**
 * The stream's events as TreeChanges. Not an async generator: one waiting for the next
 * event would only see `return()` (the client gone) once another event came, holding the
 * stream and its place in the limits until then.
 */
function changesOf(stream: LiveStream): AsyncIterableIterator<TreeChangeShape> {
  return {
    next: async () => {
      const result = await stream.next();
      return result.done ? { done: true, value: undefined } : { done: false, value: shapeOf(result.value) };
    },
    return: async () => {
      await stream.return();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

builder.subscriptionType({ description: "Live changes, over Server-Sent Events (send `Accept: text/event-stream`)." });

builder.subscriptionField("treeChanged", (t) =>
  t.field({
    type: TreeChangeType,
    description: "The tree's changes after `since` (absent: from now), then live. Same permissions as reading it; public trees for anyone.",
    args: {
      treeId: t.arg.id({ required: true, validate: recordId }),
      since: t.arg.int({ validate: z.number().int().min(0, "must be a whole number, 0 or more").nullish() }),
    },
    subscribe: async (_root, args, context) =>
      changesOf(
        await followTree(context.domain, context.user, args.treeId, {
          since: args.since ?? undefined,
          address: context.address,
          access: context.access,
        }),
      ),
    resolve: (change) => change,
  }),
);
