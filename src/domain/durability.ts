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
 */
import { AsyncSlot } from "./async-slot.js";

class Pending {
  readonly waits: Promise<void>[] = [];
}

const scopes = new AsyncSlot<Pending>("durability scope");

/**
 * Runs `work` under `lock` so that commits in it do not wait for stable storage; resolves
 * once every one of them is durable, after `lock` has released. Nested inside another
 * scope, the waits join the outer one (whose answer waits for them).
 */
export async function deferDurability<T>(lock: (work: () => Promise<T>) => Promise<T>, work: () => Promise<T>): Promise<T> {
  if (scopes.get()) return lock(work);
  const pending = new Pending();
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
