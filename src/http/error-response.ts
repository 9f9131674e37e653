/**
 * The one mapping from errors to HTTP: status, SPEC §4 error body and headers. Domain
 * errors carry their code; body-parser errors are translated; anything else is `internal`,
 * logged with its stack and never shown.
 */
import type { NextFunction, Request, Response } from "express";
import { ConflictError, DomainError, KeyInFlightError, TooManyRequestsError, ValidationError, type ErrorCode } from "../shared/errors.js";
import type { Logger } from "./logger.js";
import { confirmActor } from "../domain/login-confirmation.js";

export const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  limit_reached: 422,
  idempotency_key_reused: 422,
  too_many_requests: 429,
  internal: 500,
  unavailable: 503,
};

interface BodyParserError {
  type?: string;
  status?: number;
}

/** body-parser reports its failures with a `type`; they are the client's fault, not ours. */
function fromBodyParser(err: unknown): DomainError | null {
  const type = (err as BodyParserError | null)?.type;
  switch (type) {
    case "entity.too.large":
      return new DomainError("payload_too_large", "The request body is too large.");
    case "entity.parse.failed":
      return new DomainError("invalid_request", "The request body is not valid JSON.");
    case "entity.verify.failed":
      return new DomainError("invalid_request", "The request body is not valid UTF-8.");
    case "encoding.unsupported":
    case "charset.unsupported":
      return new DomainError("unsupported_media_type", "The request body's encoding is not supported; send UTF-8.");
    case "request.aborted":
    case "request.size.invalid":
    case "stream.encoding.set":
      return new DomainError("invalid_request", "The request body could not be read.");
    default:
      return null;
  }
}

/** zlib's codes for a body sent with Content-Encoding that does not decode. */
const BAD_COMPRESSED_BODY = new Set(["Z_DATA_ERROR", "Z_BUF_ERROR", "Z_NEED_DICT", "ERR_BUFFER_TOO_LARGE"]);

/** The router marks a path it cannot percent-decode with status 400. */
function fromHttpLayer(err: unknown): DomainError | null {
  const e = err as { status?: unknown; code?: unknown } | null;
  if (typeof e?.code === "string" && BAD_COMPRESSED_BODY.has(e.code)) {
    return new DomainError("invalid_request", "The request body could not be decompressed.");
  }
  if (err instanceof URIError) {
    return new DomainError("invalid_request", "The request path is not valid percent-encoded UTF-8.");
  }
  if (e?.status === 400) return new DomainError("invalid_request", "The request is not valid.");
  return null;
}

export function toDomainError(err: unknown): DomainError | null {
  if (err instanceof DomainError) return err;
  return fromBodyParser(err) ?? fromHttpLayer(err);
}

export function errorBody(err: DomainError): Record<string, unknown> {
  const body: Record<string, unknown> = { error: err.code, message: err.message };
  if (err instanceof ValidationError && err.details.length > 0) body.details = err.details;
  if (err instanceof ConflictError && err.details) body.details = err.details;
  return body;
}

export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    // A caller whose log-in is not confirmed yet (a card write's, from the cache) gets no
    // answer before it is; a refused log-in is the answer then (auth/middleware.ts).
    const confirming = confirmActor(req.auth?.unconfirmed ?? null);
    if (confirming) {
      const settled = confirming.then(
        () => answer(err, req, res),
        (refused: unknown) => answer(refused, req, res),
      );
      return void settled.catch((failed: unknown) => {
        logger.error("answering an error failed", { error: String(failed) });
        if (!res.headersSent) res.status(500).end();
      });
    }
    answer(err, req, res);
  };

  function answer(err: unknown, req: Request, res: Response): void {
    const known = toDomainError(err);
    const error = known ?? new DomainError("internal", "Something went wrong on the server. Try again later.");
    if (!known) logger.error("unhandled error", { path: req.path, method: req.method, error: String((err as Error)?.stack ?? err) });
    if (res.headersSent) {
      res.end();
      return;
    }
    const status = STATUS[error.code];
    if (status === 401 && req.get("x-requested-with") !== "XMLHttpRequest") {
      // Scripts and curl see the challenge; the browser client (which says
      // X-Requested-With) is spared the browser's own password prompt.
      res.set("WWW-Authenticate", 'Basic realm="cardtree", charset="UTF-8"');
    }
    if (error instanceof TooManyRequestsError || error instanceof KeyInFlightError) {
      res.set("Retry-After", String(error.retryAfterSeconds));
    }
    res.status(status).json(errorBody(error));
  }
}
