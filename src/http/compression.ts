/**
 * Compression on the wire (SPEC §12, issue 27): brotli or gzip, as the request's
 * Accept-Encoding asks, with `Vary: Accept-Encoding`.
 *
 * Two paths:
 * - Cached bodies (the read model's card lists, a tree with its cards): compressed once per
 *   revision and kept beside the plain bytes ({@link CompressedBodies}); a request only
 *   picks the copy its Accept-Encoding asks for. The compression itself runs in libuv's
 *   thread pool (zlib's asynchronous calls), so a 7 MB body never stalls the event loop.
 * - Everything else (small JSON answers, the client's files, exports, GraphQL answers):
 *   `compression`'s streaming middleware ({@link compressResponses}), which also runs zlib off
 *   the loop. Event streams are never compressed: a compressor holds bytes back until it has
 *   enough, and a live change must reach the page at once.
 */
import { promisify } from "node:util";
import zlib from "node:zlib";
import compression from "compression";
import type { Request, RequestHandler, Response } from "express";

export type Encoding = "br" | "gzip";

/** Smaller than this, a body goes out as it is: the framing costs more than it saves. */
export const COMPRESS_THRESHOLD = 1024;

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/**
 * The encoding to answer with, or null for the plain bytes (RFC 9110 §12.5.3): the
 * acceptable coding with the highest weight, brotli first at equal weight (smaller, and every
 * client that sends `br` decodes it); `*` stands for any coding not named.
 */
export function chooseEncoding(header: string | undefined): Encoding | null {
  if (!header) return null;
  const weights = new Map<string, number>();
  for (const item of header.split(",")) {
    const [name, ...params] = item.trim().toLowerCase().split(";");
    if (!name) continue;
    let q = 1;
    for (const param of params) {
      const [key, value] = param.trim().split("=");
      if (key === "q") q = Number(value);
    }
    if (!Number.isFinite(q) || q < 0 || q > 1) q = 0;
    weights.set(name, q);
  }
  const weight = (coding: Encoding) => weights.get(coding) ?? weights.get("*") ?? 0;
  const br = weight("br");
  const gzip = weight("gzip");
  if (br > 0 && br >= gzip) return "br";
  if (gzip > 0) return "gzip";
  return null;
}

/**
 * Compressing a cached body, once per revision. Brotli at quality 6: on a 20,020-card list
 * (7.0 MB) it gives 1.18 MB where quality 5 gives 1.20 and 9 gives 1.15, at twice quality
 * 5's time and a sixth of 9's (docs/performance.md, "On the wire"). gzip at its default
 * level 6: level 9 saves 1% for 40% more time.
 */
export function compress(body: Buffer, encoding: Encoding): Promise<Buffer> {
  if (encoding === "gzip") return gzip(body);
  return brotli(body, {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: 6,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
    },
  });
}

/** What one body's compressed copies cost to keep, at most, across every LRU entry. */
const JOINED_BYTES_LIMIT = 64 * 1024 * 1024;

/**
 * The compressed copies of cached bodies, made once each.
 * - A body that is one buffer of the read model's (a tree's card list) keeps its copies in
 *   a WeakMap on that buffer: they live exactly as long as the plain bytes they were made
 *   from, and a new revision, being a new buffer, gets new ones.
 * - A body joined from several parts (a tree with its cards, every tree's cards) is new
 *   bytes on every request, so its copies are keyed by the answer's ETag, which names its
 *   revision, in a small LRU bounded in bytes.
 * Concurrent requests for the same copy share one compression (the promise is kept).
 */
export class CompressedBodies {
  private readonly byBuffer = new WeakMap<Buffer, Map<Encoding, Promise<Buffer>>>();
  private readonly byEtag = new Map<string, { copy: Promise<Buffer>; bytes: number }>();
  private joinedBytes = 0;

  constructor(private readonly joinedLimit = JOINED_BYTES_LIMIT) {}

  copy(parts: readonly Buffer[], etag: string, encoding: Encoding): Promise<Buffer> {
    if (parts.length === 1) return this.ofBuffer(parts[0], encoding);
    return this.ofJoined(parts, etag, encoding);
  }

  private ofBuffer(body: Buffer, encoding: Encoding): Promise<Buffer> {
    let copies = this.byBuffer.get(body);
    if (!copies) this.byBuffer.set(body, (copies = new Map()));
    let copy = copies.get(encoding);
    if (!copy) {
      copy = compress(body, encoding);
      copies.set(encoding, copy);
      // A failure is not kept: the next request tries again.
      copy.catch(() => copies.delete(encoding));
    }
    return copy;
  }

  private ofJoined(parts: readonly Buffer[], etag: string, encoding: Encoding): Promise<Buffer> {
    const key = `${encoding} ${etag}`;
    const kept = this.byEtag.get(key);
    if (kept) {
      // Most recently used last.
      this.byEtag.delete(key);
      this.byEtag.set(key, kept);
      return kept.copy;
    }
    const plain = Buffer.concat(parts);
    const entry = { copy: compress(plain, encoding), bytes: plain.length };
    this.byEtag.set(key, entry);
    this.joinedBytes += entry.bytes;
    entry.copy.then(
      (copy) => {
        if (this.byEtag.get(key) !== entry) return;
        // Charged by the plain size until the copy exists, then by what it holds.
        this.joinedBytes += copy.length - entry.bytes;
        entry.bytes = copy.length;
      },
      () => this.forget(key, entry),
    );
    this.evict();
    return entry.copy;
  }

  private evict(): void {
    for (const [key, entry] of this.byEtag) {
      if (this.joinedBytes <= this.joinedLimit || this.byEtag.size <= 1) break;
      this.forget(key, entry);
    }
  }

  private forget(key: string, entry: { bytes: number }): void {
    if (this.byEtag.get(key) !== entry) return;
    this.byEtag.delete(key);
    this.joinedBytes -= entry.bytes;
  }
}

/**
 * The streaming middleware for every answer not sent by {@link sendJsonWithEtag}. Answers
 * that already carry a Content-Encoding (the cached bodies) pass through untouched.
 */
export function compressResponses(): RequestHandler {
  return compression({
    threshold: COMPRESS_THRESHOLD,
    brotli: { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } },
    filter: (req, res) => {
      const type = String(res.getHeader("Content-Type") ?? "");
      // Live streams (SSE, GraphQL's incremental delivery) must not wait in a compressor.
      if (type.startsWith("text/event-stream") || type.startsWith("multipart/mixed")) return false;
      return compression.filter(req, res);
    },
  });
}

/** Sends one of the encodings' copies, or the plain parts. */
export async function sendCompressible(
  req: Request,
  res: Response,
  parts: readonly Buffer[],
  etag: string,
  bodies: CompressedBodies,
): Promise<void> {
  let length = 0;
  for (const part of parts) length += part.length;
  const encoding = length >= COMPRESS_THRESHOLD ? chooseEncoding(req.get("accept-encoding")) : null;
  if (encoding && req.method !== "HEAD") {
    const copy = await bodies.copy(parts, etag, encoding);
    res.set({ "Content-Encoding": encoding, "Content-Length": String(copy.length), ETag: encodedEtag(etag, encoding) });
    res.end(copy);
    return;
  }
  res.set("Content-Length", String(length));
  for (const part of parts.slice(0, -1)) res.write(part);
  res.end(parts[parts.length - 1]);
}

/**
 * A strong ETag names one representation's bytes (RFC 9110 §8.8.3), so a compressed copy
 * gets its own: `"tag"` becomes `"tag-br"` / `"tag-gzip"`. {@link etagMatches} accepts all three.
 */
export function encodedEtag(etag: string, encoding: Encoding): string {
  return etag.endsWith('"') ? `${etag.slice(0, -1)}-${encoding}"` : `${etag}-${encoding}`;
}

/** True when `candidate` names the representation `etag`, in any of its encodings. */
export function etagMatches(candidate: string, etag: string): boolean {
  const tag = candidate.trim().replace(/^W\//, "");
  return tag === etag || tag === encodedEtag(etag, "br") || tag === encodedEtag(etag, "gzip");
}
