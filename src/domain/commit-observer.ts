/**
 * Who hears of a committed change within one request: the REST layer answers the tree's new
 * revision as `X-Tree-Revision`, GraphQL as `extensions.revisions`, so a client learns the
 * revision of each of its own writes (an undo stack needs it, SPEC §8) without any command
 * changing what it returns. The observer rides on the request's async context.
 */
import { AsyncSlot } from "./async-slot.js";
import type { Change } from "../shared/changes.js";

export type CommitObserver = (change: Change) => void;

const observers = new AsyncSlot<CommitObserver>("commit observer");

/** Runs `fn` with `observer` told of every change committed within it (and its async work). */
export function observeCommits<T>(observer: CommitObserver, fn: () => T): T {
  return observers.run(observer, fn);
}

/** Tells the current request's observer, if any, of a committed change. */
export function noteCommitted(change: Change): void {
  observers.get()?.(change);
}
