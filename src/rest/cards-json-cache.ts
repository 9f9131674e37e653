/**
 * The serialized `GET /api/trees/:treeId/cards` body of each recently read tree, kept per
 * tree revision (src/domain/tree-revisions.ts). Reading a 10,000-card tree from the store
 * and stringifying it costs ~30 ms; sending a ready buffer costs ~1.5 ms, so repeated
 * reads of an unchanged tree (every client polling or reopening it) skip the store. Each
 * body carries a strong ETag (a hash of its bytes, so it stays valid across restarts)
 * for conditional requests.
 *
 * The cache holds bytes, not permissions: callers authorise the tree first, every time.
 */
import { createHash } from "node:crypto";
import type { Request, Response } from "express";
import { cardsOfTree } from "../domain/cards.js";
import type { DomainContext } from "../domain/context.js";
import { presentCard } from "../domain/presenters.js";
import type { Tree } from "../shared/records.js";

/** Enough for a few very large trees; a 100,000-card tree serializes to about 35 MB. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

export interface CardsJson {
  revision: number;
  /** `[Card, ...]` in tree order, UTF-8. */
  body: Buffer;
  /** Quoted, as sent in the ETag header. */
  etag: string;
}

export class CardsJsonCache {
  /** Least recently used first (a Map iterates in insertion order). */
  private readonly entries = new Map<string, CardsJson>();
  /** One store read per tree and revision, however many requests miss at once. */
  private readonly pending = new Map<string, Promise<CardsJson>>();
  private bytes = 0;

  constructor(
    private readonly ctx: DomainContext,
    private readonly maxBytes = DEFAULT_MAX_BYTES,
  ) {}

  /** The cards body of `tree`, which the caller has authorised. */
  async forTree(tree: Tree): Promise<CardsJson> {
    // The revision is read before the cards: a write finishing meanwhile moves it past
    // this one, so the entry is replaced on the next read rather than served stale.
    const revision = this.ctx.treeRevisions.current(tree._id);
    const hit = this.entries.get(tree._id);
    if (hit && hit.revision === revision) {
      this.entries.delete(tree._id);
      this.entries.set(tree._id, hit);
      return hit;
    }
    const key = `${tree._id}:${revision}`;
    let loading = this.pending.get(key);
    if (!loading) {
      loading = this.load(tree, revision).finally(() => this.pending.delete(key));
      this.pending.set(key, loading);
    }
    return loading;
  }

  private async load(tree: Tree, revision: number): Promise<CardsJson> {
    const cards = await cardsOfTree(this.ctx, tree);
    const body = Buffer.from(JSON.stringify(cards.map(presentCard)));
    const entry: CardsJson = { revision, body, etag: `"${createHash("sha256").update(body).digest("base64url")}"` };
    this.remember(tree._id, entry);
    return entry;
  }

  private remember(treeId: string, entry: CardsJson): void {
    const previous = this.entries.get(treeId);
    // Two loads may finish out of order; the newer revision stays.
    if (previous && previous.revision > entry.revision) return;
    if (previous) {
      this.entries.delete(treeId);
      this.bytes -= previous.body.length;
    }
    if (entry.body.length > this.maxBytes) return;
    this.entries.set(treeId, entry);
    this.bytes += entry.body.length;
    for (const [id, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(id);
      this.bytes -= old.body.length;
    }
  }
}

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
