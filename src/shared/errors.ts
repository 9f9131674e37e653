/**
 * Domain errors: plain classes with a stable code and no HTTP in them. The REST and GraphQL
 * layers each map `code` to their own wire form (see src/http/error-response.ts and
 * src/graphql/errors.ts); anything that is not a DomainError is reported as `internal`.
 */

export type ErrorCode =
  | "invalid_request"
  | "unauthenticated"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "limit_reached"
  | "idempotency_key_reused"
  | "too_many_requests"
  | "unavailable"
  | "internal";

export interface ErrorDetail {
  path: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationError extends DomainError {
  constructor(
    message: string,
    readonly details: ErrorDetail[] = [],
  ) {
    super("invalid_request", message);
  }
}

export class UnauthenticatedError extends DomainError {
  constructor(message = "Sign in to do this: send basic credentials or log in.") {
    super("unauthenticated", message);
  }
}

export class ForbiddenError extends DomainError {
  constructor(message = "You are not allowed to do this.") {
    super("forbidden", message);
  }
}

export class NotFoundError extends DomainError {
  constructor(what = "That") {
    super("not_found", `${what} was not found.`);
  }
}

/**
 * The message of the 404 of a tree the caller cannot reach (`NotFoundError("Tree")`, as the
 * domain throws it): deleted, or private and not shared with them (the two are one answer:
 * SPEC §3). A client's waiting change to it can never go; one whose card alone is gone can
 * come back as a new card. Made by the error itself, so the two cannot drift apart.
 */
export const TREE_NOT_FOUND = new NotFoundError("Tree").message;

/**
 * A card's parent that is not a live card of its tree (deleted meanwhile, or never there):
 * 404, the one a client retrying an offline change tells apart from its own card being gone
 * (src/web/model/sync.ts moves the change to the nearest surviving ancestor).
 */
export const MISSING_PARENT = "The parent card (a live card of this tree)";

/**
 * A move that would put a card under itself or one of its descendants (someone moved the
 * target under it meanwhile): 409; a client retrying an offline change keeps its edit and
 * puts the card back where the server has it (src/web/model/sync.ts).
 */
export const MOVE_CYCLE = "A card cannot be moved under itself or one of its descendants.";

export class MissingParentError extends NotFoundError {
  constructor() {
    super(MISSING_PARENT);
  }
}

export class ConflictError extends DomainError {
  constructor(
    message: string,
    /** What the caller needs to try again (SPEC §10: the card as it now is); sent as `details`. */
    readonly details?: Record<string, unknown>,
  ) {
    super("conflict", message);
  }
}

/**
 * The first request with this Idempotency-Key is still running (SPEC §13): nothing was done
 * for this one; send it again after `retryAfterSeconds` to get the first one's answer.
 */
export class KeyInFlightError extends ConflictError {
  constructor(readonly retryAfterSeconds: number) {
    super(`A request with this Idempotency-Key is still running; nothing was done for this one. Send it again in ${retryAfterSeconds} s for its answer.`);
  }
}

/** An Idempotency-Key sent again with a different request (SPEC §13): nothing was done. */
export class IdempotencyKeyReusedError extends DomainError {
  constructor() {
    super(
      "idempotency_key_reused",
      "This Idempotency-Key was used for a different request (another method, path, If-Match or body); nothing was done. Use a new key for a new request.",
    );
  }
}

/**
 * A change whose key's claim, inserted with it (a store that claims at commit), met the
 * user's record of the key: another run of the request has it (or had it). Nothing was
 * written; the request learns what the key holds instead (domain/idempotency.ts). Never
 * an answer of its own.
 */
export class KeyClaimedAtCommitError extends Error {
  constructor() {
    super("This change's Idempotency-Key was claimed by another run of the request; nothing was written.");
  }
}

/**
 * A request without a claim of its key (claimed at commit) that learned, instead of
 * running further, what the key holds: the kept answer, or a refusal (in flight, reused).
 * The transport's answer to it is never sent: the HTTP layer answers what the key holds.
 */
export class KeyAnsweredError extends ConflictError {
  constructor() {
    super("This request's Idempotency-Key has an answer or a run of its own; nothing was done for this one.");
  }
}

/**
 * A commit that lost its revision to another writer of the same tree (another process on a
 * shared database: SPEC §11). Nothing was written; the domain redoes the command on the tree
 * as it now is (trees.ts `withTree`) and answers 409 only if it keeps losing.
 */
export class RevisionTakenError extends ConflictError {}

export class PayloadTooLargeError extends DomainError {
  constructor(message: string) {
    super("payload_too_large", message);
  }
}

export class LimitReachedError extends DomainError {
  constructor(message: string) {
    super("limit_reached", message);
  }
}

/** The store's database does not answer (STORE=postgres): nothing was done; try again soon. */
export class UnavailableError extends DomainError {
  constructor(message = "The database is not answering; nothing was changed. Try again in a moment.") {
    super("unavailable", message);
  }
}

/**
 * A keyed request that may no longer hold its key's claim (another process may have taken
 * it over, and runs again what it finds uncommitted): nothing more is written under it.
 * Thrown by the domain when the process cannot be sure of its claim (`IdempotencyRepository
 * .holds`), and by a store whose keyed write found the claim no longer the request's
 * (`ChangeKey.held`). Unavailable: the client's retry gets the other run's answer.
 */
export class KeyClaimLostError extends UnavailableError {
  constructor() {
    super("This server lost its hold on the request's Idempotency-Key while running it; nothing more was changed. Try again in a moment.");
  }
}

export class TooManyRequestsError extends DomainError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super("too_many_requests", message);
  }
}
