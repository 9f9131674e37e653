/**
 * JSON request bodies: a body in any other media type, or labelled with any charset but
 * UTF-8, is refused (415; body-parser would otherwise decode `charset=utf-16` and store
 * what it made of it), one over the size limit is refused (413) before it is buffered
 * whole, and malformed JSON or bytes that are not UTF-8 are a 400 (rather than stored with
 * replacement characters). Used by /api and /graphql alike.
 */
import { isUtf8 } from "node:buffer";
import crypto from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import { DomainError } from "../shared/errors.js";

/**
 * Where the SHA-256 of a keyed request's body as received is kept (idempotency.ts compares
 * requests by it): in the response's `locals`, Express's place for what one request's
 * middleware hands to the next. Not a property of Node's request object (one more made V8
 * copy its property store, 1.4 KB a keyed write), nor a WeakMap keyed by the request: an
 * entry of a short-lived key in a weak map is an ephemeron that every scavenge has to look
 * at until it is cleared, and a set cost 1.7-2.4 µs where `locals` (an object in dictionary
 * mode) takes 0.1 (bench loops, issue 26).
 */
const BODY_DIGEST = "idempotencyBodyDigest";

/**
 * SHA-256 in base64url: Node's one-shot `crypto.hash` (20.12 on) makes no Hash object, half
 * the time of `createHash` for a card's body; the engines field allows older Node 20s.
 */
export const sha256Base64url: (data: string | Buffer) => string =
  typeof crypto.hash === "function"
    ? (data) => crypto.hash("sha256", data, "base64url")
    : (data) => crypto.createHash("sha256").update(data).digest("base64url");
/** The hash of the body `jsonBody` read for a request sent with an Idempotency-Key; "" for none. */
export function bodyDigest(res: Response): string {
  return (res.locals[BODY_DIGEST] as string | undefined) ?? "";
}

/** Whether the request carries a body at all (a length above 0, or chunks). */
export function hasBody(req: Request): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/** The `charset` parameter of a Content-Type, lower-cased and unquoted; undefined when absent. */
export function charsetOf(contentType: string | undefined): string | undefined {
  for (const param of (contentType ?? "").split(";").slice(1)) {
    const eq = param.indexOf("=");
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== "charset") continue;
    return param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .toLowerCase();
  }
  return undefined;
}

export function jsonBody(limitBytes: number) {
  const parse = express.json({
    limit: limitBytes,
    type: () => true,
    verify: (req, res, bytes) => {
      if (!isUtf8(bytes)) throw Object.assign(new Error("not UTF-8"), { status: 400 });
      // Express made `locals` before any middleware ran (its application's `handle`).
      if (req.headers["idempotency-key"] !== undefined) (res as Response).locals[BODY_DIGEST] = sha256Base64url(bytes);
    },
  });
  return (req: Request, res: Response, next: NextFunction) => {
    if (!hasBody(req)) return next();
    if (!req.is("application/json") && !req.is("application/*+json")) {
      return next(new DomainError("unsupported_media_type", "Send the request body as application/json."));
    }
    const charset = charsetOf(req.headers["content-type"]);
    if (charset !== undefined && charset !== "utf-8") {
      return next(new DomainError("unsupported_media_type", `Send the request body in UTF-8; charset=${charset.slice(0, 40)} is not accepted.`));
    }
    // body-parser skips the body of a request whose connection has closed (on-finished's
    // "finished"), and the route would then run without it: a body-less revert, a keyed
    // write kept under its key with the wrong request. The client is gone; nothing runs.
    if (req.socket && !req.socket.readable) {
      return next(new DomainError("invalid_request", "The connection closed before the request body was read; nothing was done."));
    }
    parse(req, res, next);
  };
}
