/**
 * Idempotency keys (SPEC §13; the rules in docs/decisions.md, "Idempotency keys"): a write
 * sent with `Idempotency-Key` runs once per user and key; its first completed answer is kept
 * and given again to every later request with the same key and the same request, without
 * running anything. Transport-free: the HTTP layer (src/http/idempotency.ts) says who is
 * asking with which key and request, and hands over the answer it sent.
 *
 * - A key is claimed in the store before the request runs (one atomic step, so one process
 *   only runs it). The claim holds for a lease, renewed while the request runs; a claim whose
 *   lease ended belongs to a process that died, and the next request with the key takes it
 *   over and runs. A store that can tell a dead process's claim sooner reports its lease as
 *   ended (PostgreSQL: src/store/postgres/liveness.ts), and its process, once unsure that its
 *   claim is still its own, commits nothing more under it (`IdempotencyRepository.holds`).
 *   A write made under a claim the request holds names it (`ChangeKey.held`), and such a
 *   store writes it only while the claim is still the request's (a process paused past its
 *   lease, whose claim was taken over meanwhile, writes nothing: KeyClaimLostError).
 * - The same key while the first request runs: KeyInFlightError (409, Retry-After). The
 *   same key with another request (another fingerprint): IdempotencyKeyReusedError (422).
 * - Kept: every answer but a 5xx or 429 (GraphQL: an error coded internal, unavailable or
 *   too_many_requests), which changed nothing, so the key is released and may run again.
 * - Bounded: an answer body over ANSWER_BYTES is kept as a 409 saying the request was done;
 *   each user keeps at most PER_USER.keys answers and PER_USER.bytes of bodies, and records
 *   go after KEEP_MS (the sweep, every SWEEP_EVERY_MS).
 * - Exactly once across a crash: a request runs in the key's async context (`RunningKey.enter`);
 *   each command it runs is a numbered step (`commandStep`), and the change a step commits
 *   carries the key and the step in the same atomic write (`changeKeyHere`, changes.ts).
 *   When a claim is taken over (its process died, maybe after committing and before its
 *   answer was kept), the changes committed with the key are read first; the request then
 *   runs again with each such step answered from its committed change instead of running
 *   (command.ts), so nothing is applied twice and the answer is the one the change gave.
 *   A tree's deletion writes no change: its removal carries the key instead, in the same
 *   atomic write (`removalKeyHere`), and a step that removed its tree is answered as the
 *   deletion was (`treeTheStepRemoved`; docs/decisions.md, "A tree's deletion exactly once").
 */
import { AsyncSlot } from "./async-slot.js";
import { createHash } from "node:crypto";
import type { Change } from "../shared/changes.js";
import { DomainError, IdempotencyKeyReusedError, KeyAnsweredError, KeyClaimedAtCommitError, KeyClaimLostError, KeyInFlightError } from "../shared/errors.js";
import { newRecordId, recordIdFromBytes } from "../shared/ids.js";
import type { Ports } from "./context.js";
import type { ChangeKey, IdempotencyRecord, KeptAnswer, KeyedChange, KeyedRemoval } from "./ports/store.js";

/** How long an answer is kept at least (SPEC §13: 24 hours). */
export const KEEP_MS = 24 * 60 * 60 * 1000;
/**
 * How long a claim holds without renewal, by default: a process that died frees its keys
 * after this at the latest (on PostgreSQL at once, when the claim names its process:
 * src/store/postgres/liveness.ts). `IDEMPOTENCY_LEASE_MS` sets another
 * (config.timeouts.idempotencyLeaseMs); the seeded simulation sets a few seconds.
 */
export const LEASE_MS = 30_000;
/** A running request renews its claim three times per lease (every 10 s by default). */
const RENEWALS_PER_LEASE = 3;
/** The wait a request finding its key in flight is told (it usually ends in milliseconds). */
const RETRY_AFTER_SECONDS = 1;
/** Largest answer body kept as it is: any card's answer fits (a card's text fits a 1 MiB body). */
export const ANSWER_BYTES = 1024 * 1024;
/** Per user: most kept answers, and most bytes of kept bodies; the oldest go first past them. */
export const PER_USER = { keys: 10_000, bytes: 64 * 1024 * 1024 };
/** How often expired keys and users' keys past the bounds are swept. */
export const SWEEP_EVERY_MS = 60_000;

/** Error codes of an answer that changed nothing and may be tried again (a GraphQL answer's errors). */
const RETRYABLE_CODES = new Set(["internal", "unavailable", "too_many_requests"]);

/** Who asks, with which key, for what (method, path, If-Match and body, hashed by the transport). */
export interface KeyedRequest {
  userId: string;
  key: string;
  fingerprint: string;
}

/** Either the answer kept for the key, or the key claimed for this request to run. */
export type KeyedStart = { replay: KeptAnswer } | { run: RunningKey };

/** What keyed requests read: the store's idempotency records and the clock. */
type KeyPorts = Ports<"store" | "clock" | "config">;
/** The sweep reads no lease. */
type SweepPorts = Ports<"store" | "clock">;

/** A keyed request running here: its key, its next command step, and what a dead run of it committed. */
interface KeyedRun {
  owner: RunningKey;
  userId: string;
  key: string;
  fingerprint: string;
  nextStep: number;
  committed: ReadonlyMap<number, Change>;
  /** The trees a dead run of this request removed, by command step. */
  removed: ReadonlyMap<number, string>;
  /** Whether this run committed (or tried to) or answered from a committed change: its key is never let go. */
  changed: boolean;
  /** The committed change the last step answered from (a retry taking over a dead run), if it did. */
  lastReplayed?: Change;
  /** Whether a change carrying the key is durable (committed here), or a dead run's change or removal was found: it stands for the answer across a crash. */
  durablyChanged: boolean;
  /**
   * The durability of the last change handed to the store with the key's claim (`claimHandedOver`):
   * until it settles, the request does not know whether its claim is in the store.
   */
  claimCarried?: Promise<void>;
}

/** The keyed request of this async context, and the command step running in it (null: between commands). */
const keyedContext = new AsyncSlot<{ run: KeyedRun; step: number | null }>("keyed request");

/**
 * Runs one command of the current request as its next step. `body` gets the change that
 * step committed in a run of this request that died before keeping its answer (then it
 * must answer from that change and run nothing), or undefined. Outside a keyed request,
 * and for a command run inside another command (which belongs to the outer one's step),
 * `body` simply runs.
 *
 * A request whose key is claimed at commit (a store that `claimsAtCommit`) runs without a
 * claim until its first change carries one. `writesOnlyChanges` says the command writes
 * nothing but changes of the change log (commandStep's callers: a command that can rebuild
 * its answer from its change); any other command claims the key before it runs. A step
 * that ends without having claimed the key (it failed, its change's claim met the key's
 * record, or it committed nothing) claims it then, synchronously, and so learns what the
 * key holds: a kept answer or a refusal ends the request (KeyAnsweredError; the HTTP layer
 * answers what the key holds); a dead run's claim taken over runs the step again, answering
 * from that run's change if it committed one.
 */
export function commandStep<T>(body: (committed: Change | undefined) => Promise<T>, writesOnlyChanges = false): Promise<T> {
  const here = keyedContext.get();
  if (!here || here.step !== null) return body(undefined);
  const { run } = here;
  const step = run.nextStep++;
  const held = step > 0 ? holdStepFault?.() : undefined;
  if (held) return held.then(() => runStep(run, step, body, writesOnlyChanges));
  return runStep(run, step, body, writesOnlyChanges);
}

/** `commandStep`'s work: runs `body` as the request's step `step`. */
function runStep<T>(run: KeyedRun, step: number, body: (committed: Change | undefined) => Promise<T>, writesOnlyChanges: boolean): Promise<T> {
  const owner = run.owner;
  if (owner.claimed && !owner.outcome) {
    // Claimed already (the embedded store claims before the request runs): the step runs once,
    // its failure is the request's, and nothing is asked after it. No async wrapper: each
    // promise of a keyed write runs AsyncLocalStorage's hooks.
    const go = (): Promise<T> =>
      keyedContext.run({ run, step }, () => {
        try {
          return body((run.lastReplayed = run.committed.get(step)));
        } catch (err) {
          return Promise.reject(err);
        }
      });
    // A later step that writes more than changes (preferences, account settings, scripts) is not
    // checked against the claim in its own statement, as a change is (`ChangeKey.held`). On a
    // store processes share, a process paused past its lease would run it after another took the
    // request over and finished it, and overwrite what the user did since: it first moves its
    // lease on, which fails once the claim is another's, and so runs it only while the claim is
    // its own for a whole lease more.
    if (step > 0 && !writesOnlyChanges && owner.sharedClaims) {
      return owner.renewNow().then((held) => {
        if (!held) throw new KeyClaimLostError();
        return go();
      });
    }
    return go();
  }
  type Attempt = { ok: true; value: T } | { ok: false; error: unknown };
  /** After an attempt of a request not claimed before it: claims now when it must, and runs the step again when it must. */
  const settle = async (first: Attempt): Promise<T> => {
    let attempt = first;
    for (;;) {
      if (!attempt.ok) {
        if (owner.claimed || owner.outcome) throw attempt.error;
        // Nothing of this step was written (its change's claim met the key's record, or it failed).
        const learned = await owner.claimLate();
        if (learned !== "takenOver" && !(attempt.error instanceof KeyClaimedAtCommitError)) throw attempt.error;
      } else if (owner.claimed || !((await owner.claimLate()) === "takenOver" && run.committed.has(step))) {
        return attempt.value;
      }
      run.lastReplayed = run.committed.get(step);
      try {
        attempt = { ok: true, value: await body(run.lastReplayed) };
      } catch (error) {
        attempt = { ok: false, error };
      }
    }
  };
  // The first attempt without an async wrapper: on PostgreSQL its change carries the claim,
  // and once committed the key is claimed, so nothing more is asked (the common case).
  const first = (): Promise<T> => {
    let started: Promise<T>;
    try {
      started = body((run.lastReplayed = run.committed.get(step)));
    } catch (error) {
      return settle({ ok: false, error });
    }
    return started.then(
      (value) => (owner.claimed ? value : settle({ ok: true, value })),
      (error: unknown) => {
        if (owner.claimed || owner.outcome) throw error;
        return settle({ ok: false, error });
      },
    );
  };
  return keyedContext.run({ run, step }, () => {
    if (owner.outcome) return Promise.reject(new KeyAnsweredError());
    if (!owner.claimed && !writesOnlyChanges) return owner.claimLate().then(first);
    return first();
  });
}

/**
 * The change the next command of this keyed request answers from (a retry taking over a
 * run that died after committing it), or undefined. For a caller that reads a record before
 * its command (GraphQL's moveCard and deleteCard read the card's old parent): on such a
 * retry the record as it was is the change's `before`, not what the store has now.
 */
export function changeTheNextStepReplays(): Change | undefined {
  const here = keyedContext.get();
  if (!here || here.step !== null) return undefined;
  return here.run.committed.get(here.run.nextStep);
}

/**
 * The change the command this keyed request just ran answered from, or undefined. What
 * `changeTheNextStepReplays` says before a command, known only after it when the key is
 * claimed at commit: such a request learns that a dead run committed the step only when
 * its own change meets the key's record.
 */
export function changeTheLastStepReplayed(): Change | undefined {
  const here = keyedContext.get();
  if (!here || here.step !== null) return undefined;
  return here.run.lastReplayed;
}

/**
 * The id a record made by this step of a keyed request takes, the same in every run of the
 * request (a digest of the user, the key and the step), or undefined outside a keyed
 * request's command. For writes that are not changes of the change log (a script): a run
 * that died after inserting its record, before keeping its answer, left no change to answer
 * from, and the retry (taking over the claim, or on the embedded store, whose claims live in
 * memory, claiming afresh after the restart) finds the record under this id instead of
 * making a second one. A key used again after its 24 h gives the same id; the caller tells
 * such an old record by its age.
 */
export function keyedRecordId(): string | undefined {
  const here = keyedContext.get();
  if (!here || here.step === null) return undefined;
  for (let round = 0; ; round++) {
    const digest = createHash("sha512").update(`${here.run.userId}\0${here.run.key}\0${here.step}\0${round}`).digest();
    const id = recordIdFromBytes(digest);
    if (id) return id;
  }
}

/**
 * The key a change committed here is kept with (changes.ts), or undefined outside a keyed
 * request. With the key's claim when the request has not claimed it yet: the change carries it.
 */
export function changeKeyHere(): ChangeKey | undefined {
  const here = keyedContext.get();
  if (!here) return undefined;
  const { userId, key, fingerprint, owner } = here.run;
  // Its claim may be another process's by now: committing under it could apply the request
  // twice (that process runs it again from what it finds committed). Nothing is written.
  if (!owner.holdsClaim()) throw new KeyClaimLostError();
  here.run.changed = true;
  // A commit outside any command (none today) is step -1: a retry never answers from it.
  const changeKey: ChangeKey = { userId, key, fingerprint, step: here.step ?? -1 };
  if (!owner.claimed) changeKey.claim = owner.claimToInsert();
  else changeKey.held = owner.asRecord().claim;
  return changeKey;
}

/**
 * What a change of this keyed request must wait for before it asks `changeKeyHere`, or
 * undefined (the common case: nothing). A change that carried the key's claim may have gone
 * ahead of its commit (durability.ts, `mayCommitAhead`) while the request goes on to another
 * change: that one must carry the claim as held once the first is written (`claimedAtCommit`),
 * not insert it a second time, which would refuse it as a claim met (KeyClaimedAtCommitError)
 * and run the step again on top of the first change. No command commits twice in one scope
 * today; this keeps a claim carried once if one does.
 */
export function claimOnItsWay(): Promise<void> | undefined {
  const here = keyedContext.get();
  if (!here || here.run.owner.claimed) return undefined;
  return here.run.claimCarried;
}

/** The change carrying this request's claim was handed to the store; `durable` settles once it is written (or not). */
export function claimHandedOver(durable: Promise<void>): void {
  const here = keyedContext.get();
  if (here) here.run.claimCarried = durable;
}

/**
 * The key a tree's removal by this step is kept with (`TreeRepository.removeWithCards`),
 * removed `at`, or undefined outside a keyed request's command. Its claim is in the store
 * already: a command that is not a change claims its key before it runs (`commandStep`).
 */
export function removalKeyHere(at: string): KeyedRemoval | undefined {
  const here = keyedContext.get();
  if (!here || here.step === null) return undefined;
  const { userId, key, fingerprint, owner } = here.run;
  // As for a change (`changeKeyHere`): nothing is removed under a claim that may be another process's.
  if (!owner.holdsClaim()) throw new KeyClaimLostError();
  here.run.changed = true;
  const { claim, expiresAt } = owner.asRecord();
  return { key: { userId, key, fingerprint, step: here.step, held: claim }, at, expiresAt };
}

/**
 * The tree this step of a keyed request removed in a run that died before keeping its
 * answer (the command must then answer as the deletion did, and run nothing), or undefined.
 */
export function treeTheStepRemoved(): string | undefined {
  const here = keyedContext.get();
  if (!here || here.step === null) return undefined;
  return here.run.removed.get(here.step);
}

/**
 * Tells the keyed request of this context (if any) that a change carrying its key is on
 * stable storage (changes.ts, once the commit is durable): its answer may then be kept lazily.
 */
export function keyedChangeDurable(): void {
  const here = keyedContext.get();
  if (!here) return;
  here.run.durablyChanged = true;
  // A claim the change carried is in the store with it.
  here.run.owner.claimedAtCommit();
}

/**
 * Test-only (CARDTREE_FAULTS_FILE, src/server.ts): asked before an answer is kept; when it
 * says so, the answer is held for ever, so a test can kill the process between the commit
 * and the kept answer.
 */
let holdAnswerFault: (() => boolean) | null = null;
export function injectAnswerFault(hold: () => boolean): void {
  holdAnswerFault = hold;
}

/**
 * Test-only (CARDTREE_FAULTS_FILE, src/server.ts): asked before a keyed request's second and
 * later commands; a promise holds the request until it resolves, so a test can pause the
 * process between two committed steps.
 */
let holdStepFault: (() => Promise<void> | undefined) | null = null;
export function injectStepFault(hold: () => Promise<void> | undefined): void {
  holdStepFault = hold;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** The last day `isoAt` wrote, and its date as "YYYY-MM-DDT". */
let isoDay = Number.NaN;
let isoDate = "";
const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
/**
 * `new Date(ms).toISOString()`, the same text, for a keyed write's two times (its lease and
 * its expiry): the date is formatted once a day, the time of day by arithmetic. V8's
 * `toISOString` goes through its date cache in C++ and cost a keyed write more than the
 * rest of its claim (issue 26's 10%). Outside years 1970-9999 (and for NaN) it is
 * `toISOString`'s.
 */
export function isoAt(ms: number): string {
  if (!(ms >= 0 && ms < 253402300800000)) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  if (day !== isoDay) {
    isoDate = new Date(day * DAY_MS).toISOString().slice(0, 11);
    isoDay = day;
  }
  let rest = ms - day * DAY_MS;
  const millis = rest % 1000;
  rest = (rest - millis) / 1000;
  const seconds = rest % 60;
  rest = (rest - seconds) / 60;
  const minutes = rest % 60;
  const hours = (rest - minutes) / 60;
  return `${isoDate}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${millis < 10 ? "00" : millis < 100 ? "0" : ""}${millis}Z`;
}

const later = (now: string, ms: number) => isoAt(Date.parse(now) + ms);

/** What the key's record, found there, says to a request with `fingerprint` at `now`. */
type Verdict = { replay: KeptAnswer } | { refuse: DomainError } | { takeOver: string };

function verdictOn(there: IdempotencyRecord, fingerprint: string, now: string): Verdict {
  if (there.fingerprint !== fingerprint) return { refuse: new IdempotencyKeyReusedError() };
  if (there.answer) return { replay: there.answer };
  if (there.claim === undefined || there.leaseUntil > now) return { refuse: new KeyInFlightError(RETRY_AFTER_SECONDS) };
  // The claim's lease ended: its process died while running it, perhaps after committing.
  return { takeOver: there.claim };
}

/** What a keyed request that ran without its claim answers instead of its own answer: what the key holds. */
export type KeyOutcome = { replay: KeptAnswer } | { refuse: DomainError };

/** Keyed requests of this process running without a claim yet (claimed at commit), by user and key. */
const unclaimedRuns = new WeakMap<KeyPorts, Map<string, RunningKey>>();

/**
 * Starts a keyed request: the kept answer when there is one, else the key claimed for it.
 * On a store that `claimsAtCommit`, the key is not claimed here (only this process's own
 * knowledge of it is asked): the request runs and claims it with its first change, or
 * once a step ends without one (`commandStep`).
 * @throws IdempotencyKeyReusedError when the key was used for another request;
 *   KeyInFlightError when the request that has the key is still running.
 */
export async function startKeyed(ctx: KeyPorts, request: KeyedRequest): Promise<KeyedStart> {
  const repository = ctx.store.idempotency;
  if (repository.claimsAtCommit) return startUnclaimed(ctx, request);
  for (;;) {
    const now = ctx.clock.now();
    const record = newRecord(ctx, request, now);
    const there = await repository.claim(record);
    if (!there) return { run: new RunningKey(ctx, record) };
    const verdict = verdictOn(there, request.fingerprint, now);
    if ("replay" in verdict) return verdict;
    if ("refuse" in verdict) throw verdict.refuse;
    // The key keeps its first claim's times, so the changes of every run of it are found.
    const successor = { ...record, createdAt: there.createdAt, expiresAt: there.expiresAt };
    if (await repository.takeOver(successor, verdict.takeOver)) {
      const done = await ctx.store.changes.byKey(request.userId, request.key, there.createdAt);
      return { run: new RunningKey(ctx, successor, done) };
    }
  }
}

/**
 * `startKeyed` at once, without a promise, when the store can answer at once (it claims at
 * commit, or its claims live in memory): the start, or undefined when the caller must
 * `startKeyed` (a store that claims with a statement, or a dead claim to take over).
 * @throws as `startKeyed` does.
 */
export function startKeyedNow(ctx: KeyPorts, request: KeyedRequest): KeyedStart | undefined {
  const repository = ctx.store.idempotency;
  if (repository.claimsAtCommit) return startUnclaimed(ctx, request);
  if (!repository.claimNow) return undefined;
  const now = ctx.clock.now();
  const record = newRecord(ctx, request, now);
  const there = repository.claimNow(record);
  if (!there) return { run: new RunningKey(ctx, record) };
  const verdict = verdictOn(there, request.fingerprint, now);
  if ("replay" in verdict) return verdict;
  if ("refuse" in verdict) throw verdict.refuse;
  // A dead claim: `startKeyed` takes it over (it meets the same record again).
  return undefined;
}

/** A keyed request on a store that claims at commit: only this process's memory is asked now. */
function startUnclaimed(ctx: KeyPorts, request: KeyedRequest): KeyedStart {
  const repository = ctx.store.idempotency;
  const id = `${request.userId} ${request.key}`;
  let here = unclaimedRuns.get(ctx);
  if (!here) unclaimedRuns.set(ctx, (here = new Map()));
  const now = ctx.clock.now();
  const running = here.get(id);
  const known = running ? running.asRecord() : repository.known?.(request.userId, request.key);
  if (known) {
    const verdict = verdictOn(known, request.fingerprint, now);
    if ("replay" in verdict) return verdict;
    if ("refuse" in verdict) throw verdict.refuse;
    // A claim a request of this process runs is alive (its lease is renewed here). One whose
    // request ended without keeping an answer (it failed after a change or a removal) lapses
    // with its lease, and is taken over through the store, as another process would.
    if (running) throw new KeyInFlightError(RETRY_AFTER_SECONDS);
  }
  const run = new RunningKey(ctx, newRecord(ctx, request, now), [], false);
  here.set(id, run);
  return { run };
}

function newRecord(ctx: KeyPorts, request: KeyedRequest, now: string): IdempotencyRecord {
  const at = Date.parse(now);
  return {
    userId: request.userId,
    key: request.key,
    fingerprint: request.fingerprint,
    // Unique, not secret: the pooled random ids are cheaper than a call to the CSPRNG each.
    claim: ctx.store.idempotency.claimToken?.() ?? newRecordId(),
    leaseUntil: isoAt(at + ctx.config.timeouts.idempotencyLeaseMs),
    createdAt: now,
    expiresAt: isoAt(at + KEEP_MS),
  };
}

/** Whether an answer is kept for its key, or the key let go so the request may run again. */
export function isKept(status: number, errorCodes: readonly string[] = []): boolean {
  if (status >= 500 || status === 429) return false;
  return !errorCodes.some((code) => RETRYABLE_CODES.has(code));
}

/** The answer kept in place of one too large to keep: what a replay then says. */
function tooLargeToKeep(answer: KeptAnswer): KeptAnswer {
  const body = {
    error: "conflict",
    message: `This request was done already: it answered ${answer.status}, with ${answer.body.byteLength} bytes, too many to keep for a replay. Read the result instead (nothing was done again).`,
  };
  return { status: 409, headers: { "content-type": "application/json; charset=utf-8" }, body: Buffer.from(JSON.stringify(body)) };
}

/**
 * The keys running in this process, per context, renewed together by one timer while any
 * runs (not one timer per request: most requests end long before the first renewal).
 */
const runningKeys = new WeakMap<KeyPorts, { keys: Set<RunningKey>; timer?: NodeJS.Timeout }>();

function renewAll(ctx: KeyPorts, keys: Set<RunningKey>): void {
  const running = runningKeys.get(ctx);
  // Nothing ran since the last renewal: the timer stops here, not when the last key ends (it
  // was cleared and set again between most keyed writes under load, where the set empties often).
  if (keys.size === 0 && running?.timer) {
    clearInterval(running.timer);
    running.timer = undefined;
    return;
  }
  const leaseUntil = later(ctx.clock.now(), ctx.config.timeouts.idempotencyLeaseMs);
  for (const key of keys) key.renew(leaseUntil);
}

/** What a run that took over no dead run's changes answers from: nothing (shared, never written to). */
const NOTHING_COMMITTED: ReadonlyMap<number, Change> = new Map();
const NOTHING_REMOVED: ReadonlyMap<number, string> = new Map();

/** What a dead run made durable, by step: its changes, and the trees it removed. */
function doneBySteps(done: readonly KeyedChange[]): Pick<KeyedRun, "committed" | "removed"> {
  if (done.length === 0) return { committed: NOTHING_COMMITTED, removed: NOTHING_REMOVED };
  const committed = new Map<number, Change>();
  const removed = new Map<number, string>();
  for (const step of done) {
    if ("change" in step) committed.set(step.step, step.change);
    else removed.set(step.step, step.removedTreeId);
  }
  return { committed, removed };
}

/** The answer kept for a request whose claim was taken over with changes it cannot have rebuilt its answer from. */
function doneAlready(): KeptAnswer {
  const body = {
    error: "conflict",
    message: "This request was done already, and its answer was lost when the server stopped; it is not run again.",
  };
  return { status: 409, headers: { "content-type": "application/json; charset=utf-8" }, body: Buffer.from(JSON.stringify(body)) };
}

/**
 * A key for a request that runs now: claimed before it runs, or (`claimed` false, a store
 * that claims at commit) by its first change or once a step ends without one; renewed
 * while it runs, then finished once.
 */
export class RunningKey {
  private done = false;
  /** Set by `loginRefused`: the answer is not kept, whatever it is. */
  private refusedLogin = false;
  private readonly run: KeyedRun;
  /** What the key held when this request, run without a claim, learned it: answered instead of its own answer. */
  outcome: KeyOutcome | undefined;

  constructor(
    private readonly ctx: KeyPorts,
    private record: IdempotencyRecord,
    /** What a run of this key that died had committed or removed (after a takeover). */
    done: readonly KeyedChange[] = [],
    /** Whether the key is claimed in the store (false: claimed at commit, or later). */
    public claimed = true,
  ) {
    this.run = {
      owner: this,
      userId: record.userId,
      key: record.key,
      fingerprint: record.fingerprint,
      nextStep: 0,
      ...doneBySteps(done),
      changed: done.length > 0,
      durablyChanged: done.length > 0,
    };
    let running = runningKeys.get(ctx);
    if (!running) runningKeys.set(ctx, (running = { keys: new Set() }));
    running.keys.add(this);
    if (!running.timer) {
      const keys = running.keys;
      running.timer = setInterval(() => renewAll(ctx, keys), Math.floor(ctx.config.timeouts.idempotencyLeaseMs / RENEWALS_PER_LEASE));
      running.timer.unref();
    }
  }

  /**
   * The caller's log-in, taken from the verified logins' cache, did not hold when it was
   * confirmed (src/domain/login-confirmation.ts): nothing was built or committed for it, and
   * its answer (401, 429) is not this key's. `finish` lets the key go instead of keeping it,
   * so the retry with the right password runs.
   */
  loginRefused(): void {
    this.refusedLogin = true;
  }

  /** Whether a dead run of this key committed changes or removed a tree, so the answer is rebuilt from them (a replay). */
  get answersFromCommitted(): boolean {
    return this.run.committed.size > 0 || this.run.removed.size > 0;
  }

  /** This run as a record of its key (a running claim here), for another request of this process with the key. */
  asRecord(): IdempotencyRecord {
    return this.record;
  }

  /** The claim a change of this request carries into the store, its lease from now. */
  claimToInsert(): IdempotencyRecord {
    this.record = { ...this.record, leaseUntil: later(this.ctx.clock.now(), this.ctx.config.timeouts.idempotencyLeaseMs) };
    return this.record;
  }

  /** Whether this request may still commit under its claim (`IdempotencyRepository.holds`); a claim not made yet is made with its change. */
  holdsClaim(): boolean {
    return !this.claimed || this.ctx.store.idempotency.holds?.(this.record.claim!) !== false;
  }

  /** A change that carried the claim is committed: the claim is in the store. */
  claimedAtCommit(): void {
    this.claimed = true;
  }

  /**
   * Claims the key now, for a request that ran without its claim: "claimed", or
   * "takenOver" (a dead run's claim, whose committed changes the request now answers from).
   * @throws KeyAnsweredError, with `outcome` set, when the key holds an answer or a refusal.
   */
  async claimLate(): Promise<"claimed" | "takenOver"> {
    if (this.claimed) return "claimed";
    const { idempotency } = this.ctx.store;
    for (;;) {
      const now = this.ctx.clock.now();
      const record = { ...this.record, leaseUntil: later(now, this.ctx.config.timeouts.idempotencyLeaseMs) };
      const there = await idempotency.claim(record);
      // Its own claim: a change that carried it committed though its commit's outcome was lost.
      if (!there || there.claim === record.claim) {
        this.record = record;
        this.claimed = true;
        return "claimed";
      }
      const verdict = verdictOn(there, record.fingerprint, now);
      if (!("takeOver" in verdict)) {
        this.outcome = verdict;
        throw new KeyAnsweredError();
      }
      const successor = { ...record, createdAt: there.createdAt, expiresAt: there.expiresAt };
      if (await idempotency.takeOver(successor, verdict.takeOver)) {
        this.record = successor;
        this.claimed = true;
        const done = await this.ctx.store.changes.byKey(record.userId, record.key, there.createdAt);
        Object.assign(this.run, doneBySteps(done));
        if (done.length > 0) this.run.changed = this.run.durablyChanged = true;
        return "takenOver";
      }
    }
  }

  /** Runs the request (`work`) as this key's: its commits carry the key, its replayed steps run nothing. */
  enter<T>(work: () => T): T {
    return keyedContext.run({ run: this.run, step: null }, work);
  }

  /** Moves this claim's lease on (the store ignores it once the claim is over). */
  renew(leaseUntil: string): void {
    if (!this.claimed) return;
    const { userId, key, claim } = this.record;
    this.ctx.store.idempotency.renew(userId, key, claim!, leaseUntil).catch(() => undefined);
  }

  /** Whether other processes can take this claim over (the store is shared: it has `holds`). */
  get sharedClaims(): boolean {
    return this.ctx.store.idempotency.holds !== undefined;
  }

  /** Moves this claim's lease a whole lease on from now; resolves to whether the claim is still this request's. */
  async renewNow(): Promise<boolean> {
    const { userId, key, claim } = this.record;
    if (!this.holdsClaim()) return false;
    return this.ctx.store.idempotency.renew(userId, key, claim!, later(this.ctx.clock.now(), this.ctx.config.timeouts.idempotencyLeaseMs));
  }

  /**
   * Keeps the request's answer for its key (or, for an answer that changed nothing, lets
   * the key go). Resolves once the store has it, so an answer sent after it can be replayed;
   * to what the key holds when the request, run without a claim, learned that it is
   * answered elsewhere (that, not `answer`, is what the client is sent).
   */
  async finish(answer: KeptAnswer, errorCodes: readonly string[] = []): Promise<KeyOutcome | undefined> {
    if (this.done) return undefined;
    this.done = true;
    this.stopRenewing();
    try {
      return await this.keep(answer, errorCodes);
    } finally {
      this.forgetUnclaimed();
    }
  }

  /**
   * `finish` at once, without a promise, for the common case: a request that claimed its key
   * and committed a durable change with it, answered with what is kept, on a store that keeps
   * such answers in memory first (`completeLazilyNow`). True: kept, send the answer now;
   * false: nothing done, call `finish`.
   */
  finishNow(answer: KeptAnswer, errorCodes: readonly string[] = []): boolean {
    const repository = this.ctx.store.idempotency;
    if (this.done || this.outcome || this.refusedLogin || holdAnswerFault || !this.claimed || !this.run.durablyChanged || !repository.completeLazilyNow) {
      return false;
    }
    if (!isKept(answer.status, errorCodes)) return false;
    const kept = answer.body.byteLength > ANSWER_BYTES ? tooLargeToKeep(answer) : answer;
    const { userId, key, claim } = this.record;
    if (!repository.completeLazilyNow(userId, key, claim!, kept)) return false;
    this.done = true;
    this.stopRenewing();
    this.forgetUnclaimed();
    return true;
  }

  private stopRenewing(): void {
    runningKeys.get(this.ctx)?.keys.delete(this);
  }

  private forgetUnclaimed(): void {
    const unclaimed = unclaimedRuns.get(this.ctx);
    if (!unclaimed) return;
    const id = `${this.record.userId} ${this.record.key}`;
    if (unclaimed.get(id) === this) unclaimed.delete(id);
  }

  private async keep(answer: KeptAnswer, errorCodes: readonly string[]): Promise<KeyOutcome | undefined> {
    // A refused log-in hears nothing of the key, not even what it holds (a replay is the user's).
    if (this.outcome && !this.refusedLogin) return this.outcome;
    if (holdAnswerFault?.()) return new Promise<undefined>(() => undefined);
    if (this.refusedLogin || !isKept(answer.status, errorCodes)) {
      // A failure after a commit changed something: the key is not let go (a retry would run
      // afresh); its claim lapses instead, and the retry after its lease answers from the change.
      // A key never claimed has nothing to let go.
      if (this.run.changed || !this.claimed) return undefined;
      const { userId, key, claim } = this.record;
      await this.ctx.store.idempotency.release(userId, key, claim!);
      return undefined;
    }
    const kept = answer.body.byteLength > ANSWER_BYTES ? tooLargeToKeep(answer) : answer;
    if (!this.claimed) {
      // Ran no command (refused before one, or a write outside the commands): claimed now.
      try {
        // A dead run that committed was this request too, yet this answer was not rebuilt from it.
        if ((await this.claimLate()) === "takenOver" && this.answersFromCommitted) {
          await this.ctx.store.idempotency.complete(this.record.userId, this.record.key, this.record.claim!, doneAlready(), { lazily: true });
          return { replay: doneAlready() };
        }
      } catch (err) {
        if (this.outcome) return this.outcome;
        throw err;
      }
    }
    const { userId, key, claim } = this.record;
    // A durable change with the key answers for it after a crash: no need to wait for stable storage.
    await this.ctx.store.idempotency.complete(userId, key, claim!, kept, this.run.durablyChanged ? { lazily: true } : undefined);
    return undefined;
  }
}

/** Drops expired keys and keys past the per-user bounds; resolves to how many went. */
export function sweepIdempotencyKeys(ctx: SweepPorts, now = ctx.clock.now()): Promise<number> {
  return ctx.store.idempotency.sweep(now, PER_USER);
}

/** Sweeps now and every SWEEP_EVERY_MS; returns what stops it. */
export function scheduleIdempotencySweep(ctx: SweepPorts, log: (message: string, fields: Record<string, unknown>) => void): () => void {
  const sweep = () => {
    sweepIdempotencyKeys(ctx).catch((err: unknown) => log("sweeping idempotency keys failed", { error: String(err) }));
  };
  sweep();
  const timer = setInterval(sweep, SWEEP_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
