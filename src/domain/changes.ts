/**
 * Committing a change (SPEC §10): the one way a command writes a tree or its cards. It
 * numbers the change (the tree's revision + 1, under the tree's write lock), versions the
 * cards it touches (`__v` + 1; 0 for a new card), moves the tree's `updatedAt`, hands the
 * change to the store (which writes it and its effect all or nothing) and then to the feed.
 * Under a tree's lock (tree-access.ts) a store that can returns before the change is
 * durable; the answer and the feed then wait for it after the lock (durability.ts).
 * In a request with an Idempotency-Key, the change is kept with the key (idempotency.ts).
 */
import type { Change, ChangeKind } from "../shared/changes.js";
import { noteCommitted } from "./commit-observer.js";
import { afterDurable, durabilityDeferred } from "./durability.js";
import { changeKeyHere, claimHandedOver, claimOnItsWay, keyedChangeDurable } from "./idempotency.js";
import type { StoredCard, Tree } from "../shared/records.js";
import type { Ports } from "./context.js";
import type { Actor } from "./policy.js";
import { NotFoundError } from "../shared/errors.js";

export interface Draft {
  kind: ChangeKind;
  /** The touched cards as they are now in the store (none for created cards). */
  before?: readonly StoredCard[];
  /** The touched cards as they should be; `__v` and nothing else is set here. */
  after?: readonly StoredCard[];
  /** The tree record with its own fields changed (name, users, ...); absent: only cards changed. */
  tree?: Tree;
  /** The time to stamp on the tree; now when absent. */
  at?: string;
}

/**
 * The tree as `change` left it, for an answer rebuilt from a committed change (command.ts):
 * the record the change wrote, or else the tree as it now is at the change's revision and
 * time (a change of cards only moves those two). NotFoundError if the tree is gone since.
 */
export async function treeAfter(ctx: Ports<"store">, change: Change): Promise<Tree> {
  if (change.tree) return change.tree.after;
  const now = await ctx.store.trees.byId(change.treeId);
  if (!now) throw new NotFoundError("Tree");
  return { ...now, revision: change.revision, updatedAt: change.at };
}

/**
 * Commits `draft` against `tree` (as loaded under its lock; null when the change creates
 * the tree, which `draft.tree` then holds). Resolves to the tree as it now is, and the change.
 */
export async function commitChange(
  ctx: Ports<"store" | "clock" | "feed">,
  actor: Actor | null,
  tree: Tree | null,
  draft: Draft,
): Promise<{ tree: Tree; change: Change }> {
  const base = tree ?? draft.tree;
  if (!base) throw new Error("commitChange needs the tree or, for a new tree, draft.tree");
  const at = draft.at ?? ctx.clock.now();
  const revision = (tree?.revision ?? 0) + 1;
  const before = [...(draft.before ?? [])];
  const versions = new Map(before.map((card) => [card._id, card.__v ?? 0]));
  const after = (draft.after ?? []).map((card) => {
    const old = versions.get(card._id);
    return { ...card, __v: old === undefined ? 0 : old + 1 };
  });
  const next: Tree = { ...(draft.tree ?? base), revision, updatedAt: at };
  const change: Change = {
    treeId: base._id,
    revision,
    at,
    userId: actor && !actor.system ? actor._id : null,
    kind: draft.kind,
    before,
    after,
  };
  if (draft.tree) change.tree = { before: tree, after: next };
  const { changes } = ctx.store;
  // A change of this request that carried its claim ahead of its commit is written (or not) first.
  const claimGoing = claimOnItsWay();
  if (claimGoing) await claimGoing.catch(() => undefined);
  const key = changeKeyHere();
  if (changes.commitEarly && durabilityDeferred()) {
    // The tree's lock is let go before the flush; the answer and the feed wait for it (durability.ts).
    const { durable } = await changes.commitEarly(change, next, key);
    if (key?.claim) claimHandedOver(durable);
    // Noted once durable: a change handed over ahead of its commit may still be refused, and its request then runs again.
    await afterDurable(durable, () => {
      if (key) keyedChangeDurable();
      noteCommitted(change);
      ctx.feed.publish(change);
    });
    return { tree: next, change };
  }
  await changes.commit(change, next, key);
  if (key) keyedChangeDurable();
  ctx.feed.publish(change);
  noteCommitted(change);
  return { tree: next, change };
}
