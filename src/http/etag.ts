/**
 * Conditional reads: a JSON body sent with its ETag, or 304 when the request already holds
 * it. The ETags themselves come from what the body is derived from (the read model's tree
 * revisions, src/domain/read-model.ts), so they cost nothing to check.
 */
import type { Request, Response } from "express";
import { cachedBodies, etagMatches, sendCompressible, type Now } from "./compression.js";

/**
 * Sends a JSON body with its ETag, or 304 when the request's If-None-Match names it.
 * Plain, `parts` are written one after another without copying them into one buffer; where
 * the request accepts brotli or gzip, the body's compressed copy for this revision is sent
 * (made on the first such request, src/http/compression.ts). Sent at once when that copy is
 * there; otherwise the promise settles once it is sent.
 */
export function sendJsonWithEtag(req: Request, res: Response, etag: string, parts: readonly Buffer[]): Now<void> {
  // setHeader, not express's res.set: the same headers, without its per-call look-up of the
  // content type's charset (this one names its own) on the hottest read.
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("ETag", etag);
  // Private: it is one user's view; no-cache: revalidate every time, which is cheap.
  res.setHeader("Cache-Control", "private, no-cache");
  res.vary("Accept-Encoding");
  if (noneMatch(req.get("if-none-match"), etag)) {
    res.status(304).end();
    return;
  }
  return sendCompressible(req, res, parts, etag, cachedBodies);
}

/**
 * If-None-Match as the origin server evaluates it (RFC 9110 §13.1.2, weak comparison).
 * Express's `req.fresh` is not used: it also honours a request's `Cache-Control: no-cache`,
 * which is addressed to caches, and which fetch() adds to every request that sets
 * If-None-Match itself, so scripts would never get their 304.
 */
function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === "*") return true;
  return header.split(",").some((tag) => etagMatches(tag, etag));
}
