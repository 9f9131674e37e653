/**
 * `Idempotency-Key` on writes (SPEC §13), for /api and /graphql alike: the HTTP half of
 * src/domain/idempotency.ts. Runs once the body is read (the request's fingerprint needs
 * it) and the caller is known (keys are per user):
 *
 * - the key's syntax is checked (400 otherwise, nothing run);
 * - a caller with no user (sign-up, log-in, anonymous writes) has no keys: the header is
 *   ignored and the request runs as it would without it;
 * - a kept answer is sent again, with `Idempotent-Replayed: true`, and nothing runs;
 * - otherwise the request runs, in the key's async context (its changes carry the key, so
 *   a retry after a crash answers from them instead of running again), and its answer
 *   (status, the headers that matter, body) is held back until the store has kept it: an
 *   answer a client received can always be replayed, even if the connection drops right after.
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { OutgoingHttpHeaders } from "node:http";
import type { DomainContext } from "../domain/context.js";
import { startKeyed, startKeyedNow, type KeyedStart, type RunningKey } from "../domain/idempotency.js";
import { confirmActor, confirmationFailed } from "../domain/login-confirmation.js";
import type { StoredUser } from "../shared/records.js";
import type { KeptAnswer } from "../domain/ports/store.js";
import { DomainError, KeyInFlightError, ValidationError } from "../shared/errors.js";
import { errorBody, STATUS } from "./error-response.js";
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, idempotencyKeyProblem } from "../shared/idempotency.js";
import { bodyDigest, sha256Base64url } from "./json-body.js";
import type { Logger } from "./logger.js";

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** The headers of an answer a replay repeats; others (Set-Cookie above all) are not kept. */
const KEPT_HEADERS = ["content-type", "x-tree-revision", "location", "etag"];

export interface IdempotencyOptions {
  logger: Logger;
  /** Whether the key applies to this request (GraphQL: to mutations only); every write when absent. */
  applies?(req: Request): boolean;
  /** How a refusal (bad key, key reused, key in flight) is answered; the error handler's way when absent. */
  refuse?(res: Response, error: DomainError): void;
  /** The error codes in an answer's body (GraphQL's `errors`), for `isKept`; none when absent. */
  errorCodes?(answer: KeptAnswer): string[];
}

/** What makes two requests with one key the same request. */
function fingerprint(req: Request, res: Response): string {
  return sha256Base64url(`${req.method} ${req.originalUrl}\n${req.headers["if-match"] ?? ""}\n${bodyDigest(res)}`);
}

/** The key, checked; undefined when the request has none. @throws ValidationError */
function keyOf(req: Request): string | undefined {
  const key = req.get(IDEMPOTENCY_KEY_HEADER);
  if (key === undefined) return undefined;
  const problem = idempotencyKeyProblem(key);
  if (problem) throw new ValidationError(`The ${IDEMPOTENCY_KEY_HEADER} header ${problem}.`, [{ path: IDEMPOTENCY_KEY_HEADER, message: problem }]);
  return key;
}

function sendKept(res: Response, answer: KeptAnswer): void {
  res.status(answer.status);
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.setHeader(IDEMPOTENT_REPLAYED_HEADER, "true");
  // With its length, as the first answer went (Express's `send`), not chunked; a 204 or 304 has none.
  if (answer.status !== 204 && answer.status !== 304) res.setHeader("Content-Length", answer.body.byteLength);
  res.end(Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength));
}

/** Whether a chunk's encoding argument means UTF-8 (Node's default for a string). */
function isUtf8Encoding(encoding: unknown): boolean {
  return typeof encoding !== "string" || encoding === "utf8" || encoding === "utf-8";
}

function chunkBytes(chunk: unknown, encoding: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return Buffer.from(String(chunk), typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8");
}

/** A refusal as REST answers it (SPEC §4), for a transport that gives no `refuse` of its own. */
function refuseAsRest(res: Response, error: DomainError): void {
  if (error instanceof KeyInFlightError) res.set("Retry-After", String(error.retryAfterSeconds));
  res.status(STATUS[error.code]).json(errorBody(error));
}

/**
 * Holds the response back until `running` has kept it: writes are gathered, and the end
 * waits for the store. `res.writeHead` (yoga calls it) is held back too, its status and
 * headers noted: a request that ran without its key's claim and learned, at its end, that
 * the key is answered elsewhere sends that answer instead of its own, with other headers.
 */
function keepAnswer(res: Response, running: RunningKey, options: IdempotencyOptions, unconfirmed: StoredUser | undefined): void {
  // What a keyed write holds back is small and per request: no copy of the body when it
  // comes in one piece (Express's `send`), no copy of the response's headers, the
  // transport's own methods called as they are rather than bound (issue 26's 10%).
  let chunks: Buffer[] | null = null;
  let headHeaders: OutgoingHttpHeaders | undefined;
  let heldHead: unknown[] | null = null;
  const { writeHead, write, end } = res as unknown as Record<"writeHead" | "write" | "end", (...args: unknown[]) => Response>;
  /**
   * Once sending, the wrappers pass every call on (Node's end calls writeHead for its implicit
   * head). They are not swapped back: storing other functions in the response's method
   * properties again cost a copy of its properties per keyed write (a sampled heap profile).
   */
  let sending = false;
  res.writeHead = ((...args: unknown[]) => {
    if (sending) return writeHead.apply(res, args);
    const headers = args.find((arg, i) => i > 0 && typeof arg === "object" && arg !== null);
    if (headers && !Array.isArray(headers)) headHeaders = headers as OutgoingHttpHeaders;
    if (typeof args[0] === "number") res.statusCode = args[0];
    heldHead = args;
    return res;
  }) as Response["writeHead"];
  res.write = ((chunk: unknown, encoding?: unknown, callback?: unknown) => {
    if (sending) return write.call(res, chunk, encoding, callback);
    (chunks ??= []).push(chunkBytes(chunk, encoding));
    const done = typeof encoding === "function" ? encoding : typeof callback === "function" ? callback : undefined;
    if (done) queueMicrotask(done as () => void);
    return true;
  }) as Response["write"];
  let ending = false;
  res.end = ((...args: unknown[]) => {
    if (sending) return end.apply(res, args);
    if (ending) return res;
    ending = true;
    const callback = args.find((arg) => typeof arg === "function") as (() => void) | undefined;
    // Express's `send` ends with the whole body as a string: it is sent as it came, as a plain
    // write's is (Node then writes the head and the body in one piece, not as two buffers),
    // and the store keeps the text without decoding the bytes again.
    const text = chunks === null && typeof args[0] === "string" && isUtf8Encoding(args[1]) ? args[0] : undefined;
    const last = args[0] !== undefined && args[0] !== null && typeof args[0] !== "function" ? chunkBytes(args[0], args[1]) : undefined;
    let body: Buffer;
    if (chunks === null) body = last ?? Buffer.alloc(0);
    else {
      if (last) chunks.push(last);
      body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    }
    const headers: Record<string, string> = {};
    for (const name of KEPT_HEADERS) {
      const value = headHeaders?.[name] ?? res.getHeader(name);
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : String(value);
    }
    const answer: KeptAnswer = text === undefined ? { status: res.statusCode, headers, body } : { status: res.statusCode, headers, body, text };
    const sendOwn = () => {
      sending = true;
      // A dead run of this request committed: this answer was rebuilt from its changes, a replay.
      if (running.answersFromCommitted) res.setHeader(IDEMPOTENT_REPLAYED_HEADER, "true");
      if (heldHead) writeHead.apply(res, heldHead);
      const sent = text ?? body;
      return callback ? end.call(res, sent, callback) : end.call(res, sent);
    };
    const errorCodes = options.errorCodes?.(answer) ?? [];
    // A log-in from the cache that did not hold: the error handler answered the refusal once
    // the confirmation failed, so it is known now; nothing ran, and the key is let go.
    if (unconfirmed && confirmationFailed(unconfirmed)) running.loginRefused();
    // Kept lazily at once (the common case): sent at once, no promise in between.
    if (running.finishNow(answer, errorCodes)) return sendOwn();
    running
      .finish(answer, errorCodes)
      .then(
        (outcome) => {
          if (!outcome) return sendOwn();
          // What the key holds, not this request's answer: its headers go.
          for (const name of res.getHeaderNames()) res.removeHeader(name);
          sending = true;
          if ("replay" in outcome) return sendKept(res, outcome.replay);
          (options.refuse ?? refuseAsRest)(res, outcome.refuse);
        },
        (err: unknown) => {
          options.logger.error("keeping an idempotent answer failed", { error: String(err) });
          sendOwn();
        },
      );
    return res;
  }) as Response["end"];
}

/** The middleware; mount it after the body parser and after the caller is known. */
export function idempotentWrites(ctx: DomainContext, options: IdempotencyOptions): RequestHandler {
  const refuse = (res: Response, next: NextFunction, err: unknown) => {
    if (options.refuse && err instanceof DomainError) options.refuse(res, err);
    else next(err);
  };
  return (req, res, next) => {
    if (!WRITES.has(req.method)) return next();
    let key: string | undefined;
    try {
      key = keyOf(req);
    } catch (err) {
      return refuse(res, next, err);
    }
    // A card write's log-in taken from the cache (auth/middleware.ts) is the key's user too; it
    // is confirmed before anything of the key is answered: a replay here, a refusal (409,
    // 422) by the error handler, the request's own answer by the route.
    const unconfirmed = req.auth?.unconfirmed;
    const userId = req.auth?.user?._id ?? unconfirmed?._id;
    if (key === undefined || userId === undefined || (options.applies && !options.applies(req))) return next();
    const request = { userId, key, fingerprint: fingerprint(req, res) };
    const go = (start: KeyedStart) => {
      if ("replay" in start) {
        const confirming = unconfirmed && confirmActor(unconfirmed);
        if (!confirming) return sendKept(res, start.replay);
        return void confirming.then(() => sendKept(res, start.replay), (err: unknown) => next(err));
      }
      keepAnswer(res, start.run, options, unconfirmed);
      // In the key's context: the changes it commits carry the key (domain/idempotency.ts).
      start.run.enter(() => next());
    };
    let now: KeyedStart | undefined;
    try {
      now = startKeyedNow(ctx, request);
    } catch (err) {
      return refuse(res, next, err);
    }
    if (now) return go(now);
    startKeyed(ctx, request).then(go, (err: unknown) => refuse(res, next, err));
  };
}
