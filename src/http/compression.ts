/**
 * Compression on the wire (SPEC §12, issue 27): brotli or gzip, as the request's
 * Accept-Encoding asks, with `Vary: Accept-Encoding`.
 *
 * Two paths:
 * - Cached bodies (the read model's card lists, a tree with its cards, GraphQL's cached
 *   results): compressed once per revision and kept beside the plain bytes
 *   ({@link CompressedBodies}); a request only picks the copy its Accept-Encoding asks for.
 *   The compression itself runs in libuv's thread pool (zlib's asynchronous calls), so a
 *   7 MB body never stalls the event loop. Brotli 6 of a 7 MB body takes 0.5-1.2 s, so the
 *   first readers of a big body's revision do not wait for it: they get a gzip copy at level
 *   1 (~0.1 s), made before it (brotli starts once that copy is there and a second reader
 *   came) and dropped once the brotli copy is there. A tree written in bulk has that fast
 *   copy made before anyone asks (`prepare`, from the read model).
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
  return header ? preferred(codingWeights(header)) : null;
}

/** {@link chooseEncoding} from the weights already read from the header. */
function preferred(weight: (coding: string) => number): Encoding | null {
  const br = weight("br");
  const gzip = weight("gzip");
  if (br > 0 && br >= gzip) return "br";
  if (gzip > 0) return "gzip";
  return null;
}

/** The weight the request's Accept-Encoding gives each coding (`*` for those not named; identity is 1 unless refused). */
function codingWeights(header: string): (coding: string) => number {
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
  return (coding) => weights.get(coding) ?? (coding === "identity" ? (weights.get("*") === 0 ? 0 : 1) : (weights.get("*") ?? 0));
}

/**
 * Compressing a cached body, once per revision. Brotli at quality 6: on a 20,020-card list
 * (7.0 MB) it gives 1.18 MB where quality 5 gives 1.20 and 9 gives 1.15, at twice quality
 * 5's time and a sixth of 9's (docs/performance.md, "On the wire"). gzip at its default
 * level 6: level 9 saves 1% for 40% more time.
 */
export function compress(body: Buffer, encoding: Encoding | "gzip1"): Promise<Buffer> {
  if (encoding === "gzip1") return gzip(body, { level: 1 });
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
 * From this size on, the first readers of a body do not wait for its brotli (or gzip 6)
 * copy: brotli 6 takes ~0.1 s a megabyte here, gzip 1 about a tenth of that.
 */
export const FAST_FIRST_BYTES = 256 * 1024;

/** A copy as made: an encoding, or gzip at level 1 (`gzip1`) for the first readers of a big body. */
export type Made = Encoding | "gzip1";

/** What a request is sent: a copy and how it was made (for its ETag), or null for the plain bytes. */
export interface Picked {
  encoding: Encoding;
  made: Made;
  bytes: Buffer;
}

/** The copies of one body, made once each; the fast one forgotten once a full one exists. */
class Copies {
  private readonly made = new Map<Made, Promise<Buffer>>();
  private readonly ready = new Map<Made, Buffer>();
  /** Bytes the ready copies hold. */
  bytes = 0;
  /**
   * Readers given the fast copy so far. The full copy is started by the second: a big body
   * read once (a tree opened after an import or an edit, its next revision read by nobody)
   * never spends brotli's seconds, which ran on the server's core while that one reader's
   * browser took the list in (issue 27: ~2 s of a core for a 35 MB list, beside a 2 s open).
   */
  fastReads = 0;

  constructor(private readonly onSize: (change: number) => void = () => undefined) {}

  readyCopy(made: Made): Buffer | undefined {
    return this.ready.get(made);
  }

  /** The copies made or being made. */
  started(): Made[] {
    return [...this.made.keys()];
  }

  get(made: Made, plain: () => Buffer): Promise<Buffer> {
    const kept = this.made.get(made);
    if (kept) return kept;
    const making = compress(plain(), made);
    this.made.set(made, making);
    making.then(
      (bytes) => {
        if (this.made.get(made) !== making) return;
        this.ready.set(made, bytes);
        this.resize(bytes.length);
        // The fast copy was only for the wait: once a full copy exists, it goes.
        if (made !== "gzip1") this.forget("gzip1");
      },
      // A failure is not kept: the next request tries again.
      () => this.made.get(made) === making && this.made.delete(made),
    );
    return making;
  }

  private forget(made: Made): void {
    const bytes = this.ready.get(made);
    this.made.delete(made);
    if (!bytes) return;
    this.ready.delete(made);
    this.resize(-bytes.length);
  }

  private resize(change: number): void {
    this.bytes += change;
    this.onSize(change);
  }
}

/** A value now, or a promise of it when it must be waited for: a request whose copy is there is answered without a promise (issue 27). */
export type Now<T> = T | Promise<T>;

/**
 * The copy to send for a request's Accept-Encoding, or null for the plain bytes:
 * - a copy already made, the client's preferred encoding first (brotli, else gzip; a ready
 *   gzip copy serves a client that prefers brotli but takes gzip too, and its brotli copy is
 *   started for the readers after it);
 * - a small body: its preferred copy, made now (a few milliseconds in the thread pool);
 * - a big one: its preferred copy is started, and meanwhile a client that takes gzip gets
 *   whichever is ready first of that copy and a gzip-1 copy; one that takes only brotli gets
 *   the plain bytes if it accepts them, else waits for brotli.
 * A copy already made (and the plain bytes) is answered at once, not as a promise.
 */
function pickCopy(copies: Copies, plain: () => Buffer, length: number, header: string | undefined): Now<Picked | null> {
  if (!header) return null;
  // Read once: the header's weights decide the coding and the copies that may stand in for it.
  const weight = codingWeights(header);
  const wanted = preferred(weight);
  if (!wanted) return null;
  const takesGzip = weight("gzip") > 0;
  const order: Made[] = wanted === "br" ? ["br", "gzip", "gzip1"] : ["gzip", "gzip1"];
  for (const made of order) {
    const encoding: Encoding = made === "br" ? "br" : "gzip";
    if (encoding === "gzip" && !takesGzip) continue;
    const bytes = copies.readyCopy(made);
    if (!bytes) continue;
    // A copy short of the client's choice (gzip to a browser that prefers brotli, kept because
    // a gzip-only client asked first): sent now, and the wanted one made for the next readers;
    // after the fast copy, only once a second reader came.
    if (made !== wanted && (made !== "gzip1" || ++copies.fastReads > 1)) copies.get(wanted, plain).catch(() => undefined);
    return { encoding, made, bytes };
  }
  if (length >= FAST_FIRST_BYTES && takesGzip) {
    // The fast copy alone first, the full one after it: made side by side, brotli (seconds for
    // a 35 MB body) took half of the core the fast copy needed, and the first readers waited
    // on both (issue 27: a server on one core, the 100,000-card tree's first read).
    return fastThenFull(copies, plain, wanted);
  }
  const full = copies.get(wanted, plain).then((bytes): Picked => ({ encoding: wanted, made: wanted, bytes }));
  if (length < FAST_FIRST_BYTES) return full;
  // Wanted later by the next readers; not awaited here.
  full.catch(() => undefined);
  return weight("identity") > 0 ? null : full;
}

/**
 * A big body's fast gzip copy (the full one if the fast one fails); when this is the body's
 * second reader or a later one, the full `wanted` copy is started once the fast one is made.
 */
function fastThenFull(copies: Copies, plain: () => Buffer, wanted: Encoding): Promise<Picked> {
  const fast = copies.get("gzip1", plain);
  const full = () => copies.get(wanted, plain);
  const second = ++copies.fastReads > 1;
  fast.then(() => (second ? full() : undefined), full).catch(() => undefined);
  return fast.then(
    (bytes): Picked => ({ encoding: "gzip", made: "gzip1", bytes }),
    () => full().then((bytes): Picked => ({ encoding: wanted, made: wanted, bytes })),
  );
}

/**
 * The compressed copies of cached bodies, made once each.
 * - A body that is one buffer kept by a cache (a tree's card list in the read model, a
 *   GraphQL result in the result cache) keeps its copies in a WeakMap on that buffer: they
 *   live exactly as long as the plain bytes they were made from, and a new revision, being
 *   a new buffer, gets new ones.
 * - A body joined from several parts (a tree with its cards, every tree's cards) is new
 *   bytes on every request, so its copies are keyed by the answer's ETag, which names its
 *   revision, in a small LRU bounded in bytes.
 * Concurrent requests for the same copy share one compression (the promise is kept).
 */
export class CompressedBodies {
  private readonly byBuffer = new WeakMap<Buffer, Copies>();
  private readonly byEtag = new Map<string, Copies>();
  private joinedBytes = 0;

  constructor(private readonly joinedLimit = JOINED_BYTES_LIMIT) {}

  /** The copy in `encoding` (the full one, never the fast one). */
  copy(parts: readonly Buffer[], etag: string, encoding: Encoding): Promise<Buffer> {
    const { copies, plain } = this.copiesOf(parts, etag);
    return copies.get(encoding, plain);
  }

  /**
   * Makes a big cached body's first readers' copy now, before anyone asks (the read model's
   * cards of a tree just written in bulk, src/rest/api.ts): its fast gzip copy (brotli's
   * seconds are spent only once a second reader came). Settles when the copy is made.
   * A small body is left for its first request (a few milliseconds).
   */
  prepare(body: Buffer): Promise<void> {
    if (body.length < FAST_FIRST_BYTES) return Promise.resolve();
    const { copies, plain } = this.copiesOf([body], "");
    if (copies.readyCopy("br") || copies.readyCopy("gzip")) return Promise.resolve();
    // The fast copy only: a second reader's pick starts brotli for the readers after it.
    return copies.get("gzip1", plain).then(
      () => undefined,
      () => undefined,
    );
  }

  /** The copies of a body made or being made, fast one included. */
  started(parts: readonly Buffer[], etag: string): Made[] {
    return this.copiesOf(parts, etag).copies.started();
  }

  /** What to send for `acceptEncoding` (see {@link pickCopy}); null: the plain bytes. */
  pick(parts: readonly Buffer[], etag: string, acceptEncoding: string | undefined): Now<Picked | null> {
    let length = 0;
    for (const part of parts) length += part.length;
    if (length < COMPRESS_THRESHOLD || !acceptEncoding) return null;
    const { copies, plain } = this.copiesOf(parts, etag);
    return pickCopy(copies, plain, length, acceptEncoding);
  }

  private copiesOf(parts: readonly Buffer[], etag: string): { copies: Copies; plain: () => Buffer } {
    if (parts.length === 1) {
      const [body] = parts;
      let copies = this.byBuffer.get(body);
      if (!copies) this.byBuffer.set(body, (copies = new Copies()));
      return { copies, plain: () => body };
    }
    let joined: Buffer | undefined;
    const plain = () => (joined ??= Buffer.concat(parts));
    const copies = this.byEtag.get(etag);
    if (copies) {
      // Most recently used last.
      this.byEtag.delete(etag);
      this.byEtag.set(etag, copies);
      return { copies, plain };
    }
    const entry = new Copies((change) => {
      if (this.byEtag.get(etag) !== entry) return;
      this.joinedBytes += change;
      this.evict();
    });
    this.byEtag.set(etag, entry);
    return { copies: entry, plain };
  }

  private evict(): void {
    for (const [etag, entry] of this.byEtag) {
      if (this.joinedBytes <= this.joinedLimit || this.byEtag.size <= 1) break;
      this.byEtag.delete(etag);
      this.joinedBytes -= entry.bytes;
    }
  }
}

/** The process's compressed copies of cached bodies (REST and GraphQL): one per revision, shared by every request. */
export const cachedBodies = new CompressedBodies();

/**
 * The streaming middleware for every answer not sent by {@link sendJsonWithEtag}. Answers
 * that already carry a Content-Encoding (the cached bodies) pass through untouched.
 */
export function compressResponses(): RequestHandler {
  const middleware = compression({
    threshold: COMPRESS_THRESHOLD,
    brotli: { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } },
    filter: (req, res) => {
      const type = String(res.getHeader("Content-Type") ?? "");
      // Live streams (SSE, GraphQL's incremental delivery) must not wait in a compressor.
      if (type.startsWith("text/event-stream") || type.startsWith("multipart/mixed")) return false;
      if ((res as Response).locals?.[SENT_AS_IS] === true) return false;
      return compression.filter(req, res);
    },
  });
  // An event stream is never compressed (above), and it lives for hours: it is not given
  // the middleware's per-response wrappers and their state at all (with 10,000 streams open,
  // those were ~0.7 KB of each stream's memory).
  return (req, res, next) => (req.method === "GET" && isEventStreamPath(req.path) ? next() : middleware(req, res, next));
}

/** The REST event streams (SPEC §10 and presence), which are Server-Sent Events. */
const EVENT_STREAM_PATH = /^\/api\/trees\/[^/]+\/(?:events|presence)$/;

/**
 * Whether a GET of `path` is one of the REST event streams. A list of its own, kept to the
 * routes by test/rest/openapi.test.ts (every path the API document answers with
 * text/event-stream must be on it).
 */
export function isEventStreamPath(path: string): boolean {
  return EVENT_STREAM_PATH.test(path);
}

/**
 * Sends a cached body: the copy {@link CompressedBodies.pick} gives for the request's
 * Accept-Encoding, with `Content-Encoding` and (given an `etag`) the copy's own ETag, or the
 * plain parts. Plain bytes sent on purpose to a client that takes compression (a big body
 * whose brotli copy is not there yet) are marked so that the streaming middleware leaves
 * them as they are. Sent at once when the copy is there (or none is wanted); otherwise the
 * promise settles once it is sent.
 */
export function sendCompressible(req: Request, res: Response, parts: readonly Buffer[], etag: string | null, bodies: CompressedBodies): Now<void> {
  // Set outright when nothing else varies yet (express's res.vary parses and merges).
  if (res.hasHeader("Vary")) res.vary("Accept-Encoding");
  else res.setHeader("Vary", "Accept-Encoding");
  const header = req.get("accept-encoding");
  const picked = req.method === "HEAD" || (etag === null && parts.length > 1) ? null : bodies.pick(parts, etag ?? "", header);
  if (picked instanceof Promise) return picked.then((copy) => sendPicked(res, parts, etag, header, copy));
  sendPicked(res, parts, etag, header, picked);
}

function sendPicked(res: Response, parts: readonly Buffer[], etag: string | null, header: string | undefined, picked: Picked | null): void {
  // setHeader rather than express's res.set: the same headers, none a Content-Type.
  if (picked) {
    res.setHeader("Content-Encoding", picked.encoding);
    res.setHeader("Content-Length", String(picked.bytes.length));
    if (etag !== null) res.setHeader("ETag", encodedEtag(etag, picked.made));
    res.end(picked.bytes);
    return;
  }
  let length = 0;
  for (const part of parts) length += part.length;
  if (chooseEncoding(header) !== null) res.locals[SENT_AS_IS] = true;
  res.setHeader("Content-Length", String(length));
  for (const part of parts.slice(0, -1)) res.write(part);
  res.end(parts[parts.length - 1]);
}

/** `res.locals` key of a response the streaming middleware must not compress. */
const SENT_AS_IS = "cardtreeSentAsIs";

/**
 * A strong ETag names one representation's bytes (RFC 9110 §8.8.3), so a compressed copy
 * gets its own: `"tag"` becomes `"tag-br"` / `"tag-gzip"` / `"tag-gzip1"` (the fast copy).
 * {@link etagMatches} accepts all four.
 */
export function encodedEtag(etag: string, encoding: Made): string {
  return etag.endsWith('"') ? `${etag.slice(0, -1)}-${encoding}"` : `${etag}-${encoding}`;
}

/** True when `candidate` names the representation `etag`, in any of its encodings. */
export function etagMatches(candidate: string, etag: string): boolean {
  const tag = candidate.trim().replace(/^W\//, "");
  return tag === etag || (["br", "gzip", "gzip1"] as const).some((made) => tag === encodedEtag(etag, made));
}
