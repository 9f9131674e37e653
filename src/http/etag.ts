/**
 * Conditional reads: a JSON body sent with its ETag, or 304 when the request already holds
 * it. The ETags themselves come from what the body is derived from (the read model's tree
 * revisions, src/domain/read-model.ts), so they cost nothing to check.
 */
import type { Request, Response } from "express";

/**
 * Sends a JSON body with its ETag, or 304 when the request's If-None-Match names it.
 * `parts` are written one after another without copying them into one buffer.
 */
export function sendJsonWithEtag(req: Request, res: Response, etag: string, parts: readonly Buffer[]): void {
  res.set({
    "Content-Type": "application/json; charset=utf-8",
    ETag: etag,
    // Private: it is one user's view; no-cache: revalidate every time, which is cheap.
    "Cache-Control": "private, no-cache",
  });
  if (noneMatch(req.get("if-none-match"), etag)) {
    res.status(304).end();
    return;
  }
  let length = 0;
  for (const part of parts) length += part.length;
  res.set("Content-Length", String(length));
  for (const part of parts.slice(0, -1)) res.write(part);
  res.end(parts[parts.length - 1]);
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
  return header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}
