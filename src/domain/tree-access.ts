/**
 * Reaching one tree: its id checked, the tree loaded and authorised for an action of the
 * policy, and for writes the tree's lock held. Every command on a tree comes through here
 * (src/domain/command.ts `treeCommand`, and the reads of history, exports, live streams).
 */
import type { Ports } from "./context.js";
import { deferDurability, RunAgainError } from "./durability.js";
import { RevisionTakenError, ValidationError } from "../shared/errors.js";
import { RECORD_ID } from "../shared/ids.js";
import { confirmActor, confirmAgain } from "./login-confirmation.js";
import { authorizeTree, type Actor, type TreeAction } from "./policy.js";
import type { Tree } from "../shared/records.js";

export function assertTreeIdSyntax(treeId: string): void {
  if (!RECORD_ID.test(treeId)) {
    throw new ValidationError("The tree id is not valid.", [
      { path: "treeId", message: "must be 24 characters of a-z and 0-9" },
    ]);
  }
}

/**
 * Loads a tree the actor may `action`.
 * @throws ValidationError for a malformed id; UnauthenticatedError, NotFoundError or
 *   ForbiddenError as the policy decides.
 */
export async function loadTree(ctx: Ports<"store">, actor: Actor | null, treeId: string, action: TreeAction): Promise<Tree> {
  assertTreeIdSyntax(treeId);
  return authorizeTree(actor, action, await ctx.store.trees.byId(treeId));
}

/**
 * `loadTree` answered at once, when the store can give the tree's record without reading
 * (`Store.instant`: exactly the record a read would give now): the same id check and the same
 * policy on it. undefined when it cannot (then `loadTree`), never for a refusal.
 * @throws as loadTree
 */
export function loadTreeInstantly(ctx: Ports<"store">, actor: Actor | null, treeId: string, action: TreeAction): Tree | undefined {
  assertTreeIdSyntax(treeId);
  const tree = ctx.store.instant?.treeById(treeId);
  return tree && authorizeTree(actor, action, tree);
}

/**
 * Tries of one write that keeps losing its revision to other processes before it answers
 * 409. Each try is a fresh race with the other process's next write, so a few tries still lose
 * now and then: with 8, the two-process kill test met a 409 once under CI's load. A try
 * costs one read of the tree and one commit.
 */
const REVISION_RACE_TRIES = 25;

/**
 * One attempt of a write, through the store's `keptReads` when it has them: a busy tree's
 * next write may then read the tree, its parent card and the writer from what this
 * process's last commit left, checked by its own commit, and runs again from fresh reads
 * unless that commit is what it ends in (postgres/kept-reads.ts). A keyed request is no
 * different: its claim rides on the commit that checks the kept reads (under the lock, or
 * handed over ahead of it), so a commit refused as stale wrote no claim either, and a commit
 * refused for the key (KeyClaimedAtCommitError) is not run again here: what the key holds
 * decides the answer, not the reads. A write to a
 * contended tree always reads fresh: another process writes it too, so a kept copy is
 * likely stale, and a commit refused for it would be a race lost while the processes take
 * turns (tree-races.ts).
 */
function keptReadsOr<T>(ctx: Ports<"store" | "treeRaces">, treeId: string, attempt: (again: boolean) => Promise<T>): Promise<T> {
  if (!ctx.store.keptReads || ctx.treeRaces.contended(treeId)) return attempt(false);
  return ctx.store.keptReads(treeId, attempt);
}

/**
 * Runs `change` under the tree's write lock with the tree freshly loaded and authorised.
 * Every write to a tree or its cards passes here; it moves the tree's revision through
 * `commitChange` (changes.ts).
 *
 * The lock is this process's. Another process sharing the store (SPEC §11) may commit the
 * revision first; the store then refuses this commit (RevisionTakenError) and nothing was
 * written, so the step runs again, still holding the lock (this process's other writers
 * stay behind it), on the tree as it now is: loaded, authorised and checked afresh (a
 * conditional write whose card really changed now answers 409 from its own version
 * check). A lost race also marks the tree contended, here and in the other processes,
 * which are told (tree-races.ts): for a while every attempt on it holds a lock all
 * processes respect, so their writes take turns instead of racing. Only a write that loses
 * `REVISION_RACE_TRIES` times in a row answers the race's 409.
 *
 * `prefetch`, when given, reads what `change` will need besides the tree (a new card's
 * parent, the owner's record) at the same time as the tree, under the lock, in each attempt
 * afresh: `change` gets it once the tree is loaded and authorised, exactly as fresh as if it
 * had read it itself, without waiting for a round trip of its own (issue 27). An actor whose
 * log-in is confirmed late (login-confirmation.ts) is confirmed there too, before the tree's
 * answer is used: a refused log-in is the answer, whatever the tree.
 *
 * A store that keeps a busy tree for its next write (PostgreSQL, `keptReads`) may answer
 * those reads from memory; an attempt that then does not end in its commit runs again from
 * fresh reads before anything counts (`keptReadsOr` below). Such a store may also hand the
 * change over ahead of its commit and let the lock go at once (durability.ts
 * `mayCommitAhead`), so that the writers waiting build on it and commit with it; when it is
 * not written, nothing of this write was, and the whole write runs once more, committing
 * before it lets the lock go.
 */
export function withTree<T, P = undefined>(
  ctx: Ports<"store" | "treeLocks" | "treeRaces">,
  actor: Actor | null,
  treeId: string,
  action: TreeAction,
  change: (tree: Tree, prefetched: P) => Promise<T>,
  prefetch?: () => Promise<P>,
): Promise<T> {
  assertTreeIdSyntax(treeId);
  const once = (ahead: boolean) => withTreeOnce(ctx, actor, treeId, action, change, prefetch, ahead);
  return once(true).catch((err: unknown) => {
    if (!(err instanceof RunAgainError)) throw err;
    // Nothing of the first run was written. The second commits before it lets the lock go, as
    // every write did before changes could go ahead, so it cannot be refused after the lock.
    if (err.lostRace) ctx.treeRaces.lost(treeId);
    confirmAgain(actor);
    return once(false);
  });
}

/** `withTree`'s work under the lock; `ahead`: its commit may be handed over before it is checked (durability.ts). */
function withTreeOnce<T, P>(
  ctx: Ports<"store" | "treeLocks" | "treeRaces">,
  actor: Actor | null,
  treeId: string,
  action: TreeAction,
  change: (tree: Tree, prefetched: P) => Promise<T>,
  prefetch: (() => Promise<P>) | undefined,
  ahead: boolean,
): Promise<T> {
  // The lock is held until the change is applied, not until it is on disk; the answer waits for that (durability.ts).
  return deferDurability((work) => ctx.treeLocks.run(treeId, work), async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await ctx.treeRaces.attempt(treeId, () => keptReadsOr(ctx, treeId, async (again) => {
          if (again) confirmAgain(actor);
          // Read beside the tree, under the lock, so that a store across a network pays one
          // round trip for both; nothing of it is used (or thrown) unless the tree is allowed.
          // A log-in taken from the verified logins' cache is confirmed in the same turn, so
          // by the same statement, and before anything else counts (login-confirmation.ts).
          const confirming = confirmActor(actor);
          const early = prefetch?.();
          early?.catch(() => undefined);
          const loading = loadTree(ctx, actor, treeId, action);
          if (confirming) {
            loading.catch(() => undefined);
            await confirming;
          }
          const tree = await loading;
          return change(tree, (await early) as P);
        }));
      } catch (err) {
        if (!(err instanceof RevisionTakenError)) throw err;
        ctx.treeRaces.lost(treeId);
        // The next try reads afresh, the log-in too if it held on a user record the store kept.
        confirmAgain(actor);
        if (attempt >= REVISION_RACE_TRIES) throw err;
        // After two losses in a row, a short random pause (at most ~20 ms), so two processes stop meeting.
        if (attempt >= 2) await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(20, 2 * attempt)));
      }
    }
  }, ahead);
}
