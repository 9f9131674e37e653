/**
 * History (SPEC §10), read from the change log: a tree's changes, a card's versions, the
 * trash; and the two restores, each one new change, so nothing is ever erased (restoring
 * can itself be undone by restoring the revision before it).
 *
 * Choices the SPEC leaves open (docs/architecture.md, "History"):
 * - Restoring a tree brings back its cards (content, position, parent, trashed or not) and
 *   its name and `latex` as they were after that revision. Collaborators and `publicUrl`
 *   are access, not content: they stay as they are now.
 * - Restoring a deleted card brings back the subtree deleted with it (the cards trashed at
 *   the same moment under it). Its place: where it was when its parent is alive; otherwise
 *   last among the children of its nearest live ancestor, or last in the first column.
 */
import type { z } from "zod";
import type { Change } from "../shared/changes.js";
import { ConflictError, NotFoundError } from "../shared/errors.js";
import type { cardVersionRecord, historyEntry, trashEntry } from "../shared/record-schemas.js";
import type { StoredCard, Tree } from "../shared/records.js";
import { historyQuery, noInput, parseInput, restoreTreeInput, revertChangeInput } from "../shared/schemas.js";
import { firstWords } from "../shared/text.js";
import { walkTreeOrder, childrenByParent } from "../shared/tree-order.js";
import { positionAfter, withinCardAllowance } from "./card-batches.js";
import { assertCardIdSyntax } from "./cards.js";
import { commitChange, treeAfter } from "./changes.js";
import type { Ports } from "./context.js";
import type { Actor } from "./policy.js";
import { presentCard, presentTree } from "./presenters.js";
import { treeCommand } from "./command.js";
import { loadTree } from "./tree-access.js";

/** Changes (or versions) in one answer unless `limit` says otherwise. */
export const HISTORY_PAGE = 50;

export type HistoryEntry = z.infer<typeof historyEntry>;
export type CardVersion = z.infer<typeof cardVersionRecord>;
export type TrashEntry = z.infer<typeof trashEntry>;

function cardIdsOf(change: Change): string[] {
  const ids = new Set<string>();
  for (const card of change.after) ids.add(card._id);
  for (const card of change.before) ids.add(card._id);
  return [...ids];
}

/** cardIdsOf's cards by their first words: as the change left them, or as they were when it deleted them. */
function titlesOf(change: Change, ids: string[]): string[] {
  const text = new Map<string, string>();
  for (const card of change.before) text.set(card._id, card.content);
  for (const card of change.after) if (card.trashed === undefined || !text.has(card._id)) text.set(card._id, card.content);
  return ids.map((id) => firstWords(text.get(id) ?? ""));
}

/**
 * The tree's changes, newest first: those below `before` (all when absent), at most `limit`.
 * @throws ValidationError, and the policy's errors (404 for a tree the actor cannot read).
 */
export async function treeHistory(ctx: Ports<"store">, actor: Actor | null, treeId: string, query: unknown): Promise<HistoryEntry[]> {
  const { before, limit } = parseInput(historyQuery, query);
  const tree = await loadTree(ctx, actor, treeId, "read");
  const changes = await ctx.store.changes.history(tree._id, { before, limit: limit ?? HISTORY_PAGE });
  return changes.map((change) => {
    const cardIds = cardIdsOf(change);
    return { revision: change.revision, at: change.at, userId: change.userId, kind: change.kind, cardIds, titles: titlesOf(change, cardIds) };
  });
}

/**
 * A card's versions, newest first, as the changes that touched it left it (live or trashed).
 * @throws ValidationError, NotFoundError (no such card in the tree) and the policy's errors.
 */
export async function cardVersions(
  ctx: Ports<"store">,
  actor: Actor | null,
  treeId: string,
  cardId: string,
  query: unknown = {},
): Promise<CardVersion[]> {
  assertCardIdSyntax(cardId);
  const { limit } = parseInput(historyQuery.pick({ limit: true }), query);
  const tree = await loadTree(ctx, actor, treeId, "read");
  const card = await ctx.store.cards.byId(cardId);
  if (!card || card.treeId !== tree._id) throw new NotFoundError("Card");
  const changes = await ctx.store.changes.ofCard(tree._id, cardId, limit ?? HISTORY_PAGE);
  return changes.flatMap((change) => {
    const after = change.after.find((c) => c._id === cardId);
    return after ? [{ __v: after.__v ?? 0, content: after.content, at: change.at, userId: change.userId }] : [];
  });
}

/** The roots of deleted subtrees: trashed cards whose parent was not trashed with them. */
function deletedSubtrees(trashed: readonly StoredCard[]): { root: StoredCard; members: StoredCard[] }[] {
  const byId = new Map(trashed.map((card) => [card._id, card]));
  const deletedWithParent = (card: StoredCard) => {
    const parent = card.parentId === null ? undefined : byId.get(card.parentId);
    return parent !== undefined && parent.trashed === card.trashed;
  };
  const byParent = childrenByParent(trashed.filter(deletedWithParent));
  return trashed
    .filter((card) => !deletedWithParent(card))
    .map((root) => ({
      root,
      members: [root, ...walkTreeOrder(trashed, { rootId: root._id, includeRoot: false, byParent }).map((e) => e.card)],
    }));
}

/**
 * The tree's trash: each deleted subtree by its root card, newest first, with who deleted it.
 * @throws ValidationError and the policy's errors.
 */
export async function treeTrash(ctx: Ports<"store">, actor: Actor | null, treeId: string): Promise<TrashEntry[]> {
  const tree = await loadTree(ctx, actor, treeId, "read");
  const subtrees = deletedSubtrees(await ctx.store.cards.trashedByTree(tree._id));
  subtrees.sort((a, b) => (a.root.trashed! < b.root.trashed! ? 1 : a.root.trashed! > b.root.trashed! ? -1 : 0));
  return Promise.all(
    subtrees.map(async ({ root, members }) => {
      // The last change that touched a trashed card is the one that trashed it.
      const [deletion] = await ctx.store.changes.ofCard(tree._id, root._id, 1);
      return { card: presentCard(root), count: members.length, at: root.trashed!, userId: deletion?.userId ?? null };
    }),
  );
}

/**
 * Brings a deleted card back with the subtree deleted with it; resolves to those cards in
 * tree order.
 * @throws ValidationError, NotFoundError (no such card in the tree's trash),
 *   LimitReachedError and the policy's errors.
 */
export const restoreCard = treeCommand({
  name: "restoreCard",
  needs: ["store", "clock", "feed", "ownerLocks"],
  input: noInput,
  action: "write",
  precheck: (_ctx, { cardId }: { treeId: string; cardId: string }) => assertCardIdSyntax(cardId),
  async run(ctx, actor, tree, { cardId }): Promise<StoredCard[]> {
    const trashed = await ctx.store.cards.trashedByTree(tree._id);
    const subtree = deletedSubtrees(trashed).find(({ members }) => members.some((c) => c._id === cardId));
    if (!subtree) throw new NotFoundError("Card in the trash");
    // A card deleted with its parent comes back with it: restoring it restores from that root.
    const { root, members } = subtree;
    const live = await ctx.store.cards.liveByTree(tree._id);
    const liveIds = new Set(live.map((c) => c._id));
    const all = new Map([...trashed, ...live].map((c) => [c._id, c]));
    let parentId = root.parentId;
    while (parentId !== null && !liveIds.has(parentId)) parentId = all.get(parentId)?.parentId ?? null;
    const at = ctx.clock.now();
    const after = members.map((card) => {
      const { trashed: _trashed, ...revived } = card;
      return { ...revived, updatedAt: at } as StoredCard;
    });
    if (parentId !== root.parentId) {
      after[0].parentId = parentId;
      after[0].position = positionAfter(live.filter((c) => c.parentId === parentId));
    }
    return withinCardAllowance(ctx, tree.owner, after.length, async () => {
      const { change } = await commitChange(ctx, actor, tree, { kind: "restore.card", before: members, after, at });
      return change.after;
    });
  },
  replay: (_ctx, change) => change.after,
});

/** Whether two states of a card differ in what a restore brings back. */
function differs(a: StoredCard, b: StoredCard): boolean {
  return (
    a.content !== b.content ||
    a.position !== b.position ||
    a.parentId !== b.parentId ||
    (a.trashed === undefined) !== (b.trashed === undefined)
  );
}

/**
 * Brings the whole tree back to how it was after `revision`, as one new change: cards
 * created since are trashed, cards deleted since revived, contents, positions and parents
 * as they were; the name and latex too. Resolves to the tree as it now is.
 * @throws ValidationError, NotFoundError (no such revision, or no longer kept),
 *   LimitReachedError and the policy's errors.
 */
export const restoreTree = treeCommand({
  name: "restoreTree",
  needs: ["store", "clock", "feed", "ownerLocks"],
  input: restoreTreeInput,
  action: "write",
  async run(ctx, actor, tree, _target: { treeId: string }, { revision }): Promise<Tree> {
    const current = tree.revision ?? 0;
    if (revision > current) throw new NotFoundError(`Revision ${revision} of this tree`);
    const later = await ctx.store.changes.since(tree._id, revision, current - revision);
    if (later.length !== current - revision || (later.length > 0 && later[0].revision !== revision + 1)) {
      throw new NotFoundError(`Revision ${revision} of this tree (its history was pruned)`);
    }
    const cards = [...(await ctx.store.cards.liveByTree(tree._id)), ...(await ctx.store.cards.trashedByTree(tree._id))];
    // Walk back from now: each later change undone, newest first.
    const then = new Map<string, StoredCard | null>(cards.map((card) => [card._id, card]));
    let thenTree: Tree = tree;
    for (const change of [...later].reverse()) {
      const before = new Map(change.before.map((card) => [card._id, card]));
      for (const card of change.after) then.set(card._id, before.get(card._id) ?? null);
      if (change.tree?.before) thenTree = change.tree.before;
    }
    const at = ctx.clock.now();
    const before: StoredCard[] = [];
    const after: StoredCard[] = [];
    let revived = 0;
    let removed = 0;
    for (const card of cards) {
      const old = then.get(card._id);
      // Created after that revision: to the trash.
      const wanted: StoredCard = old ?? { ...card, trashed: card.trashed ?? at };
      if (!differs(card, wanted)) continue;
      const next: StoredCard = { ...card, content: wanted.content, position: wanted.position, parentId: wanted.parentId, updatedAt: at };
      if (wanted.trashed === undefined) {
        delete next.trashed;
        if (card.trashed !== undefined) revived++;
      } else if (card.trashed === undefined) {
        next.trashed = at;
        removed++;
      }
      before.push(card);
      after.push(next);
    }
    const treeChanged = thenTree.name !== tree.name || thenTree.latex !== tree.latex;
    let nextTree: Tree | undefined;
    if (treeChanged) {
      nextTree = { ...tree, name: thenTree.name, __v: tree.__v + 1 };
      if (thenTree.latex === undefined) delete nextTree.latex;
      else nextTree.latex = thenTree.latex;
    }
    const commit = async () =>
      (await commitChange(ctx, actor, tree, { kind: "restore.tree", before, after, at, tree: nextTree })).tree;
    return withinCardAllowance(ctx, tree.owner, Math.max(0, revived - removed), commit);
  },
  replay: (ctx, change) => treeAfter(ctx, change),
});

/** Kinds that touch access, not content: nothing a revert could give back. */
const NOT_REVERTIBLE = new Set<Change["kind"]>(["tree.create", "tree.share"]);

/**
 * Reverts one change (an undo in the browser, SPEC §8) as one new change of kind `revert`
 * (with `together`, several: one undo step of the browser that took more than one write):
 * the cards it touched go back to how they were before it (content, parent, position), the
 * cards it created go to the trash, the cards it deleted come back with their subtree where
 * they were (or last under their nearest live ancestor when that place is gone), and a
 * rename or `latex` switch is undone. A redo is the revert of that revert.
 *
 * A card touched since (its `__v` is not the one the change left) makes it a 409 `conflict`
 * whose `details.changed` lists those cards as they now are, unless `force`; so are live
 * cards added since under a card the revert would trash (they would go with it). When the
 * tree is already as the revert would leave it, nothing is written and the change is null.
 * @throws ValidationError, NotFoundError (no such revision, pruned, or a tree.create or
 *   tree.share change, which has no revert), ConflictError, LimitReachedError and the
 *   policy's errors.
 */
export const revertChange = treeCommand({
  name: "revertChange",
  needs: ["store", "clock", "feed", "ownerLocks"],
  input: revertChangeInput,
  action: "write",
  async run(ctx, actor, tree, _target: { treeId: string }, { revision, force, together }): Promise<{ tree: Tree; change: Change | null }> {
    const revisions = [...new Set([revision, ...(together ?? [])])].sort((a, b) => a - b);
    const targets: Change[] = [];
    for (const r of revisions) {
      if (r > (tree.revision ?? 0)) throw new NotFoundError(`Revision ${r} of this tree`);
      const [target] = await ctx.store.changes.since(tree._id, r - 1, 1);
      if (!target || target.revision !== r) throw new NotFoundError(`Revision ${r} of this tree (its history was pruned)`);
      // It changed who may open the tree, not its content: there is no revert of it to make.
      // Not a 400: the request is well formed, and which change a revision is depends on the tree.
      if (NOT_REVERTIBLE.has(target.kind)) throw new NotFoundError(`A change to revert at revision ${r} (a ${target.kind} cannot be reverted)`);
      targets.push(target);
    }
    // Each card back to how the earliest of the changes found it; changed since when it is
    // not as the latest of them left it.
    const firstBefore = new Map<string, StoredCard | null>();
    const lastAfter = new Map<string, StoredCard>();
    for (const target of targets) {
      const before = new Map(target.before.map((card) => [card._id, card]));
      for (const left of target.after) {
        if (!firstBefore.has(left._id)) firstBefore.set(left._id, before.get(left._id) ?? null);
        lastAfter.set(left._id, left);
      }
    }
    const cards = [...(await ctx.store.cards.liveByTree(tree._id)), ...(await ctx.store.cards.trashedByTree(tree._id))];
    const byId = new Map(cards.map((card) => [card._id, card]));
    const at = ctx.clock.now();
    const changed: StoredCard[] = [];
    const wanted = new Map<string, StoredCard>();
    for (const [id, left] of lastAfter) {
      const current = byId.get(id);
      if (!current) continue;
      if ((current.__v ?? 0) !== (left.__v ?? 0)) changed.push(current);
      const old = firstBefore.get(id);
      const next: StoredCard = old
        ? { ...current, content: old.content, parentId: old.parentId, position: old.position, updatedAt: at }
        : { ...current, updatedAt: at };
      if (!old || old.trashed !== undefined) next.trashed = current.trashed ?? at;
      else delete next.trashed;
      wanted.set(current._id, next);
    }
    // The tree as the revert leaves it: who is live, under whom.
    const liveAfter = (card: StoredCard) => (wanted.get(card._id) ?? card).trashed === undefined;
    const parentAfter = (card: StoredCard) => (wanted.get(card._id) ?? card).parentId;
    // Live cards outside the change under a card the revert trashes go with it (and count as changed since).
    const liveChildren = childrenByParent(cards.filter((card) => card.trashed === undefined));
    const goingAway = [...wanted.values()].filter((next) => next.trashed !== undefined).map((next) => next._id);
    while (goingAway.length > 0) {
      for (const child of liveChildren.get(goingAway.pop()!) ?? []) {
        if (wanted.has(child._id)) continue;
        wanted.set(child._id, { ...child, trashed: at, updatedAt: at });
        changed.push(child);
        goingAway.push(child._id);
      }
    }
    // A card coming back whose parent is gone: last among its nearest live ancestor's children.
    for (const next of wanted.values()) {
      if (next.trashed !== undefined || next.parentId === null) continue;
      const parent = byId.get(next.parentId);
      if (parent && liveAfter(parent)) continue;
      let parentId: string | null = next.parentId;
      while (parentId !== null && !(byId.has(parentId) && liveAfter(byId.get(parentId)!))) parentId = byId.get(parentId)?.parentId ?? null;
      next.parentId = parentId;
      next.position = positionAfter(cards.filter((c) => c._id !== next._id && liveAfter(c) && parentAfter(c) === parentId));
    }
    let nextTree: Tree | undefined;
    const treeChanges = targets.filter((target) => target.tree?.before);
    if (treeChanges.length > 0) {
      const treeBefore = treeChanges[0]!.tree!.before!;
      const afterThen = treeChanges[treeChanges.length - 1]!.tree!.after;
      if (!force && (tree.name !== afterThen.name || tree.latex !== afterThen.latex)) {
        throw new ConflictError(`The tree's name or latex changed since revision ${afterThen.revision}; revert with force to undo it anyway.`, {
          changed: [],
          tree: presentTree(tree),
        });
      }
      if (tree.name !== treeBefore.name || tree.latex !== treeBefore.latex) {
        nextTree = { ...tree, name: treeBefore.name, __v: tree.__v + 1 };
        if (treeBefore.latex === undefined) delete nextTree.latex;
        else nextTree.latex = treeBefore.latex;
      }
    }
    if (changed.length > 0 && !force) {
      throw new ConflictError(
        `${changed.length === 1 ? "A card" : `${changed.length} cards`} changed since revision ${revisions[revisions.length - 1]}; revert with force to overwrite ${changed.length === 1 ? "it" : "them"}.`,
        { changed: changed.map((card) => ({ card: presentCard(card), deleted: card.trashed !== undefined })) },
      );
    }
    const touched = [...wanted.values()].filter((next) => differs(byId.get(next._id)!, next));
    if (touched.length === 0 && !nextTree) return { tree, change: null };
    const beforeCards = touched.map((next) => byId.get(next._id)!);
    const revived = touched.filter((next) => next.trashed === undefined && byId.get(next._id)!.trashed !== undefined).length;
    const removed = touched.filter((next) => next.trashed !== undefined && byId.get(next._id)!.trashed === undefined).length;
    return withinCardAllowance(ctx, tree.owner, Math.max(0, revived - removed), () =>
      commitChange(ctx, actor, tree, { kind: "revert", before: beforeCards, after: touched, at, tree: nextTree }),
    );
  },
  replay: async (ctx, change) => ({ tree: await treeAfter(ctx, change), change }),
});

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * With `HISTORY_DAYS` set, drops changes older than that from the log now and then daily
 * (never a tree's latest change, and never the current cards or trees). Returns the stop.
 */
export function scheduleHistoryPruning(ctx: Ports<"store" | "config">, log: (message: string, fields: Record<string, unknown>) => void): () => void {
  const days = ctx.config.historyDays;
  if (days < 0) return () => {};
  const prune = () => {
    const olderThan = new Date(Date.now() - days * DAY_MS).toISOString();
    ctx.store.changes.prune(olderThan).then(
      (dropped) => {
        if (dropped > 0) log("pruned old changes from the history", { dropped, olderThan });
      },
      (err: unknown) => log("pruning the history failed", { error: String(err) }),
    );
  };
  prune();
  const timer = setInterval(prune, DAY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
