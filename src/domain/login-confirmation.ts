/**
 * Actors whose log-in is confirmed late (issue 27). A card write with basic credentials that
 * this process verified lately is not held up by a read of the user before it starts: the
 * edge (src/auth/credentials.ts `recall`) hands the domain an actor with a confirmation,
 * and `withTree` runs that confirmation beside the tree's read, under the tree's lock, in
 * the same statement on PostgreSQL (src/store/postgres/read-batch.ts). Nothing is built or
 * committed for the actor before it holds. The edge waits for it before any answer: an error
 * raised before the tree was reached (a body that does not parse, a precheck) is answered by
 * the error handler once a read of its own confirmed it (src/http/error-response.ts), and a
 * success by `asConfirmedWriter` (src/auth/middleware.ts).
 *
 * The confirmation is made once per request: every call of `confirmActor` gets the same
 * promise. It must start its store read synchronously, so that the read goes with the
 * tree's (both asked in one turn of the event loop).
 */
import type { Actor } from "./policy.js";

const pending = new WeakMap<Actor, { start: () => Promise<void>; started?: Promise<void>; held?: boolean; refused?: boolean }>();

/** `actor` (an object of this request alone) is to be confirmed by `confirm` before it acts. */
export function withLateConfirmation<A extends Actor>(actor: A, confirm: () => Promise<void>): A {
  pending.set(actor, { start: confirm });
  return actor;
}

/**
 * The confirmation of `actor`, started now if it was not yet; undefined for an actor whose
 * log-in was confirmed before it reached the domain (every other actor).
 * @throws (the promise) UnauthenticatedError or TooManyRequestsError when the log-in no
 *   longer holds, or the store's error.
 */
export function confirmActor(actor: Actor | null): Promise<void> | undefined {
  if (actor === null) return undefined;
  const entry = pending.get(actor);
  if (!entry) return undefined;
  if (!entry.started) {
    const started = entry.start();
    entry.started = started;
    entry.held = false;
    // Awaited by whoever asked; a confirmation that fails while nobody waits yet is not unhandled.
    // Its outcome is noted before anyone who awaits it hears of it (these handlers are the promise's first).
    started.then(
      () => {
        if (entry.started === started) entry.held = true;
      },
      () => {
        if (entry.started === started) entry.refused = true;
      },
    );
  }
  return entry.started;
}

/**
 * A write's attempt runs again from fresh reads (the store's `keptReads`): a confirmation
 * that held may have read a user record the store kept, so the next `confirmActor` reads
 * again. One that failed stays failed: it was decided by a full check of the credentials,
 * which reads the user afresh (and counts as a failed log-in only once).
 */
export function confirmAgain(actor: Actor | null): void {
  const entry = actor === null ? undefined : pending.get(actor);
  if (entry?.held) {
    entry.started = undefined;
    entry.held = false;
  }
}

/**
 * Whether `actor`'s confirmation was started and failed (a refused log-in, or the store's
 * error): known at once by anyone who has awaited it. A keyed request lets its key go then
 * (src/http/idempotency.ts): nothing was built for such an actor, and its 401 is no answer
 * to keep for the key.
 */
export function confirmationFailed(actor: Actor): boolean {
  return pending.get(actor)?.refused === true;
}
