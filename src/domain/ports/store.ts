/**
 * The store interface the domain depends on. It speaks in records and plain arguments,
 * never in an engine's query language, so that another engine (PostgreSQL) can implement
 * it without the domain changing. Every method that writes resolves only once the write is
 * durable; a method that writes several records writes all of them or none.
 */
import type { Change } from "../../shared/changes.js";
import type { ChangeNotice } from "./change-feed.js";
import type { StoredCard, StoredScript, StoredUser, Tree } from "../../shared/records.js";

export interface Session {
  /** A keyed hash of the cookie token; the token itself is never stored. */
  _id: string;
  userId: string;
  csrf: string;
  createdAt: string;
  expiresAt: string;
}

export interface UserRepository {
  insert(user: StoredUser): Promise<void>;
  byId(id: string): Promise<StoredUser | null>;
  byIds(ids: readonly string[]): Promise<StoredUser[]>;
  byEmail(email: string): Promise<StoredUser | null>;
  list(): Promise<StoredUser[]>;
  /** Sets the given fields; resolves to the updated user, or null when there is none. */
  update(id: string, fields: Partial<Omit<StoredUser, "_id">>): Promise<StoredUser | null>;
}

/** See `Store.instant`: each answers what the repository's read would, or undefined when it cannot say without reading. */
export interface InstantReads {
  /** `users.byEmail(email)`, when held; undefined for a user not held (or none). */
  userByEmail(email: string): StoredUser | undefined;
  /** `trees.byId(id)`, when held; undefined for a tree not held (or none). */
  treeById(id: string): Tree | undefined;
  /** `sessions.withUser(id)`, when both records are held; undefined otherwise (none, a user gone, or not held). */
  sessionWithUser(id: string): { session: Session; user: StoredUser } | undefined;
}

/** Trees are read here; they are written only through `changes.commit` (and removed whole). */
export interface TreeRepository {
  byId(id: string): Promise<Tree | null>;
  byPublicUrl(publicUrl: string): Promise<Tree | null>;
  /** Trees whose `users` include the user. */
  forUser(userId: string): Promise<Tree[]>;
  /**
   * Removes the tree, every card of it (trashed or not) and its changes. With `keyed` (a
   * keyed request's deletion), the removal is kept with its key in the same atomic write,
   * until `keyed.expiresAt` or later: a retry after a crash finds it (`changes.byKey`).
   */
  removeWithCards(id: string, keyed?: KeyedRemoval): Promise<void>;
}

/** Cards are read here; they are written only through `changes.commit`, with the change that writes them. */
export interface CardRepository {
  /** The card with this id, live or trashed, or null. */
  byId(id: string): Promise<StoredCard | null>;
  /** The live (not trashed) card with this id, or null. */
  liveById(id: string): Promise<StoredCard | null>;
  /** Every trashed card of the tree, in no particular order. */
  trashedByTree(treeId: string): Promise<StoredCard[]>;
  /** Every live card of the tree, in no particular order. */
  liveByTree(treeId: string): Promise<StoredCard[]>;
  /** How many live cards the trees hold, in all. */
  countLiveByTrees(treeIds: readonly string[]): Promise<number>;
}

/**
 * Which keyed request committed a change (SPEC §13, exactly once across a crash): the
 * user's Idempotency-Key, the request's fingerprint, and which command of the request it
 * was (`step`: 0 for the first command a request runs, 1 for the next; a GraphQL document
 * may run several). Kept with the change in the same atomic write, never shown with it: a
 * retry after the process died finds the change by its key instead of running it again.
 */
export interface ChangeKey {
  userId: string;
  key: string;
  fingerprint: string;
  step: number;
  /**
   * The key's claim, to be inserted with the change (a store that `claimsAtCommit`): the
   * request ran without one. The claim and the change go together or not at all; a claim
   * that meets the user's record of the key already there refuses its own change only
   * (KeyClaimedAtCommitError), never the others committed with it.
   */
  claim?: IdempotencyRecord;
  /**
   * The token of the key's claim the request holds already (its change carries no `claim`).
   * A store whose claims another process can take over (PostgreSQL) writes the change only
   * while the key's record still holds this claim, checked in the same atomic write, which
   * a take-over waits for; else it writes nothing and throws KeyClaimLostError. So a process
   * paused past its lease cannot commit a step that another process has run again.
   */
  held?: string;
}

/**
 * A tree's removal by a keyed request (SPEC §13): which request and step removed it, when,
 * and until when the key lives (its record's `expiresAt`); the removal is kept that long.
 * Only the tree's id and the key are kept, never its records.
 */
export interface KeyedRemoval {
  key: ChangeKey;
  at: string;
  expiresAt: string;
}

/**
 * What a keyed request made durable at one command step: a change it committed, or a tree
 * it removed (`removedTreeId`; the removal wrote no change).
 */
export type KeyedChange = { step: number; change: Change } | { step: number; removedTreeId: string };

/**
 * The change log (SPEC §10). `commit` is the one way a tree or its cards change (a tree's
 * removal aside): the write and its record in the log happen together or not at all.
 */
export interface ChangeRepository {
  /**
   * Applies and records one change, all or nothing, durable when it resolves: `tree`
   * (whose `revision` equals `change.revision`) creates or replaces the tree record, each
   * card of `change.after` creates or replaces that card, and the change joins the log.
   * With `key`, the change is kept together with the keyed request that made it (`byKey`).
   * @throws ConflictError when the tree already has a change with this revision (another
   *   process committed first); nothing is written then. KeyClaimedAtCommitError when
   *   `key.claim` met a record of the key: nothing is written then either.
   */
  commit(change: Change, tree: Tree, key?: ChangeKey): Promise<void>;
  /**
   * Optional (group commit without holding the tree's lock across the flush): applies and
   * records the change like `commit` and resolves once later reads and commits in this
   * process see it, with `durable`, which resolves once it is durable and rejects if it
   * never will be (the store has then failed, and so do the `durable` of every change
   * committed after it). Whoever calls this answers nothing about the change, nor about
   * anything read after it, before `durable` resolved (domain/durability.ts). A store whose
   * commits can be refused after the lock may hand the change over ahead of that check only
   * where `mayCommitAhead()`; `durable` then rejects with RunAgainError when it was not
   * written, and the caller runs its whole scope again (PostgreSQL: postgres/kept-reads.ts).
   * @throws ConflictError as `commit` does.
   */
  commitEarly?(change: Change, tree: Tree, key?: ChangeKey): Promise<{ durable: Promise<void> }>;
  /**
   * The changes committed with the user's `key` at `since` or later (a key is used again
   * only once its record expired), and the trees removed with it then (until the removal's
   * `expiresAt`), in step order: what a request that died before keeping its answer had
   * done. Asked only when a claim is taken over, never on the way of a write.
   */
  byKey(userId: string, key: string, since: string): Promise<KeyedChange[]>;
  /** Changes with a revision above `since`, oldest first, at most `limit`. */
  since(treeId: string, since: number, limit: number): Promise<Change[]>;
  /** Newest first: revisions below `before` (all when absent), at most `limit`. */
  history(treeId: string, options: { before?: number; limit: number }): Promise<Change[]>;
  /** The changes that touched the card, newest first, at most `limit`. */
  ofCard(treeId: string, cardId: string, limit: number): Promise<Change[]>;
  /** Drops changes older than `olderThan`, never a tree's latest; resolves to how many. */
  prune(olderThan: string): Promise<number>;
}

export interface SessionRepository {
  insert(session: Session): Promise<void>;
  byId(id: string): Promise<Session | null>;
  /**
   * The session and its user (null when the account is gone), read together: on a store
   * across a network, one statement and one snapshot, so a browser's request reads its
   * log-in in one round trip, not two. Null when there is no such session.
   */
  withUser(id: string): Promise<{ session: Session; user: StoredUser | null } | null>;
  /**
   * Ends the session. This and `removeForUser` tell the other processes sharing the store,
   * in the same transaction, so their live streams on it end (`Peers.onSignedOut`).
   */
  remove(id: string): Promise<void>;
  /** Ends every session of the user but `exceptId`; their other streams end everywhere too. */
  removeForUser(userId: string, exceptId?: string): Promise<void>;
  removeExpired(now: string): Promise<void>;
}

/** Users' own browser scripts (docs/scripting.md); each belongs to one user. */
export interface ScriptRepository {
  insert(script: StoredScript): Promise<void>;
  byId(id: string): Promise<StoredScript | null>;
  /** The user's scripts, oldest first (ties by `_id`): the order their pages load them. */
  forUser(userId: string): Promise<StoredScript[]>;
  /** Replaces the stored record with `script` (same `_id`). */
  replace(script: StoredScript): Promise<void>;
  remove(id: string): Promise<void>;
}

/** An answer kept for an Idempotency-Key (SPEC §13): what is sent again on a replay. */
export interface KeptAnswer {
  status: number;
  /** The headers that matter (Content-Type, X-Tree-Revision, ...), lower-cased names. */
  headers: Record<string, string>;
  body: Uint8Array;
  /**
   * The body as the text it was sent as, when it was sent as one string (UTF-8): the same
   * bytes as `body`. A store that keeps text takes it instead of decoding `body` again.
   */
  text?: string;
}

/** A user's Idempotency-Key: claimed by the request running it, then holding its answer. */
export interface IdempotencyRecord {
  userId: string;
  key: string;
  /** What the request was (method, path, If-Match, body): a replay must be the same. */
  fingerprint: string;
  /** The running request's token; absent once the answer is kept. */
  claim?: string;
  /** While running: until when the claim holds (renewed as it runs; a dead process's claim ends). */
  leaseUntil: string;
  createdAt: string;
  /** When the sweep may drop it (at least 24 hours after it was made). */
  expiresAt: string;
  answer?: KeptAnswer;
}

/**
 * Idempotency keys (SPEC §13), per user. Every step is one atomic step of the store, so
 * processes sharing it agree on who runs a key and what it answered.
 */
export interface IdempotencyRepository {
  /**
   * Whether a request that writes only through the change log may run without a claim:
   * its first change then carries the claim (`ChangeKey.claim`), in the same atomic write,
   * so a key costs no statement of its own (docs/decisions.md, "A key claimed at commit").
   */
  readonly claimsAtCommit?: boolean;
  /**
   * With `claimsAtCommit`: what this process knows of the user's key without asking the
   * store (a claim it runs, an answer it keeps lazily), else undefined.
   */
  known?(userId: string, key: string): IdempotencyRecord | undefined;
  /**
   * A new claim's token (unique); absent: any record id. A store that processes share names
   * the claiming process in it, so that another process meeting the claim can tell at once
   * that its process died (and take it over without waiting for its lease to end).
   */
  claimToken?(): string;
  /**
   * False when this process can no longer be sure that `claim`, which it made, is not taken
   * over by another process while it runs (PostgreSQL: the process lost the lock that tells
   * the others it is alive): nothing more may be committed under it. Absent: always true.
   */
  holds?(claim: string): boolean;
  /**
   * Inserts `record` (a running claim) unless the user has the key already.
   * Resolves to null when inserted, else to the record that is there.
   */
  claim(record: IdempotencyRecord): Promise<IdempotencyRecord | null>;
  /**
   * `claim` at once, without a promise, for a store whose claims live in this process's
   * memory (the embedded store); absent elsewhere. Every promise a keyed write makes runs
   * the async hooks that AsyncLocalStorage installs, so the common path makes none it need
   * not (docs/decisions.md, "Idempotency-Key: the keyed path without promises").
   */
  claimNow?(record: IdempotencyRecord): IdempotencyRecord | null;
  /**
   * Replaces the user's record of the key with `record` if it is still the running claim
   * `previousClaim` (whose lease ended: its process died). Resolves to whether it did.
   */
  takeOver(record: IdempotencyRecord, previousClaim: string): Promise<boolean>;
  /** Moves the lease of a running claim; resolves to whether the claim was there to move (false: it ended, or another took it over). */
  renew(userId: string, key: string, claim: string, leaseUntil: string): Promise<boolean>;
  /**
   * Keeps the claim's answer, ending the claim; does nothing if the claim is not there any
   * more. Resolves once this process's later claims of the key find the answer; with
   * `lazily`, the store need not have it on stable storage (nor, on a shared store, visible
   * to other processes) by then: the request committed a change that carries its key
   * durably, so a crash that loses the answer is answered from that change
   * (docs/decisions.md, "A key's answer kept lazily").
   */
  complete(userId: string, key: string, claim: string, answer: KeptAnswer, options?: { lazily?: boolean }): Promise<void>;
  /**
   * `complete(..., { lazily: true })` at once, without a promise, for a store that keeps such
   * answers in memory first. False when it could not (the caller then calls `complete`).
   */
  completeLazilyNow?(userId: string, key: string, claim: string, answer: KeptAnswer): boolean;
  /** Forgets a running claim (its request changed nothing); does nothing if it is not there. */
  release(userId: string, key: string, claim: string): Promise<void>;
  /**
   * Drops the records expired at `now`, and each user's oldest kept answers beyond
   * `most.keys` records or `most.bytes` bytes of bodies; with them the keyed removals
   * (`TreeRepository.removeWithCards`) expired at `now`. Resolves to how many records it
   * dropped (removals not counted).
   */
  sweep(now: string, most: { keys: number; bytes: number }): Promise<number>;
}

/** `failed`: a write failed and could not be undone; every call then throws. */
export type StoreStatus = "open" | "failed" | "closed";

export interface Store {
  users: UserRepository;
  trees: TreeRepository;
  cards: CardRepository;
  changes: ChangeRepository;
  sessions: SessionRepository;
  scripts: ScriptRepository;
  idempotency: IdempotencyRepository;
  status(): StoreStatus;
  /**
   * Optional (issue 27: a store across a network): runs `attempt`, one attempt of a write to
   * `treeId` under the tree's lock (tree-access.ts `withTree`), letting the store answer that
   * tree, its live cards by id and users by id from what this process's own last commit of
   * the tree left, each checked by the attempt's commit (the tree's revision guard, the user's
   * record unchanged). Unless the attempt ends in a commit of the tree, or in a commit whose
   * outcome is unknown, it runs again as `attempt(true)` with every read fresh, and that
   * outcome is the answer: nothing is answered from memory alone. `attempt` must undo, when
   * `again`, whatever it derived from the first run's reads (a confirmed log-in).
   */
  keptReads?<T>(treeId: string, attempt: (again: boolean) => Promise<T>): Promise<T>;
  /**
   * Optional (issue 27): a few reads answered at once from this process's memory, where the
   * store can tell that this is exactly what the read would answer now (the embedded store:
   * every write to it passes through this process, and drops what it kept). Otherwise they
   * answer undefined, and the caller reads as usual. A store shared with other processes
   * (PostgreSQL) has none.
   */
  instant?: InstantReads;
  /** Optional: told of every change notice (any process's), so that copies `keptReads` keeps older than it are dropped. */
  heard?(notice: ChangeNotice): void;
  /** Flushes pending writes and releases the files. */
  close(): Promise<void>;
}
