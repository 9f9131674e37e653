/**
 * Group commit without the tree's lock held across the flush (issue 32). A writer of a tree
 * holds the tree's lock while it reads the tree, checks and commits; it used to hold it
 * until the store had flushed the change to stable storage too, so the writers of one tree
 * each paid a flush of their own. Inside `deferDurability` a commit (changes.ts) returns as
 * soon as the store applied it (`ChangeRepository.commitEarly`), the lock goes to the next
 * writer, and the answer waits, after the lock, for the flush that covers the change:
 *
 * - a later writer works on top of a change not yet on disk, but its own change is logged
 *   after it, so the flush that makes its own change durable makes that one durable too,
 *   and it is answered only then;
 * - a failed flush fails the store: the `durable` of that change and of every later one
 *   rejects, so neither writer is answered 2xx;
 * - the feed hears of a change (live streams, the read model, caches) only once it is
 *   durable, in the order they were committed.
 *
 * What a writer read while holding the lock may include such a change; an error answer it
 * builds from that (a 409, a 422) waits too, since it also waits for the end of the scope.
 *
 * A store whose commit can still be refused after the lock (PostgreSQL: another process took
 * the revision, a kept record changed; postgres/kept-reads.ts) may hand a change over ahead
 * of its commit only where the whole scope can run again: a scope opened with `runsAgain`,
 * not nested in another, that has committed nothing yet (`mayCommitAhead`). When such a
 * change is refused, its `durable` rejects with RunAgainError, nothing of the scope was
 * written, and its owner (tree-access.ts `withTree`) runs it again.
 */
import { AsyncSlot } from "./async-slot.js";
import type { Locks } from "./ports/locks.js";

class Pending {
  readonly waits: Promise<void>[] = [];
  /** Another scope was opened inside this one (its commits join this one's). */
  nested = false;

  constructor(readonly runsAgain: boolean) {}
}

/**
 * A change handed over ahead of its commit was not written (refused by the database, or
 * built on one that was): nothing of its scope was, and the scope runs again from fresh
 * reads. `lostRace`: another process took the tree's revision (tree-races.ts counts it).
 */
export class RunAgainError extends Error {
  constructor(
    readonly lostRace: boolean,
    options?: { cause?: unknown },
  ) {
    super("A change handed over ahead of its commit was not written; the write runs again.", options);
  }
}

const scopes = new AsyncSlot<Pending>("durability scope");
/** Set inside the work of locks whose commits are written before the lock goes (`committedUnder`). */
const underOtherLock = new AsyncSlot<true>("under a lock besides the tree's");

/**
 * Runs `work` under `lock` so that commits in it do not wait for stable storage; resolves
 * once every one of them is durable, after `lock` has released. Nested inside another
 * scope, the waits join the outer one (whose answer waits for them). `runsAgain`: the caller
 * runs the whole scope again on RunAgainError, so its first commit may go ahead of its
 * checks (`mayCommitAhead`).
 */
export async function deferDurability<T>(lock: (work: () => Promise<T>) => Promise<T>, work: () => Promise<T>, runsAgain = false): Promise<T> {
  const outer = scopes.get();
  if (outer) {
    outer.nested = true;
    return lock(work);
  }
  const pending = new Pending(runsAgain);
  let value: T;
  try {
    value = await lock(() => scopes.run(pending, work));
  } catch (err) {
    // The failure is the answer; what was committed before it is still published once durable.
    for (const wait of pending.waits) wait.catch(() => undefined);
    throw err;
  }
  await Promise.all(pending.waits);
  return value;
}

/**
 * Where a commit's durability goes: into the current scope (the caller's answer waits for
 * it after the lock), or awaited here when there is none. `then` runs once it is durable.
 */
export async function afterDurable(durable: Promise<void>, then: () => void): Promise<void> {
  const done = durable.then(then);
  const pending = scopes.get();
  if (pending) pending.waits.push(done);
  else await done;
}

/** Whether commits here may return before they are durable. */
export function durabilityDeferred(): boolean {
  return scopes.get() !== undefined;
}

/**
 * Whether a commit here may be handed over before the store knows it will be written: the
 * scope runs again as a whole on RunAgainError, and nothing of it was committed before, nor
 * can be by a scope nested in it, whose commits would not run again with it.
 */
export function mayCommitAhead(): boolean {
  const pending = scopes.get();
  return pending !== undefined && pending.runsAgain && !pending.nested && pending.waits.length === 0 && !underOtherLock.get();
}

/**
 * `locks` whose work commits its changes before it returns, never ahead: writers of other
 * trees, and of other processes, take the same lock (an owner's card allowance counts the
 * owner's cards under it, card-batches.ts), and must find the change written once it is
 * theirs.
 */
export function committedUnder(locks: Locks): Locks {
  return { run: (key, work) => locks.run(key, () => underOtherLock.run(true, work)) };
}
