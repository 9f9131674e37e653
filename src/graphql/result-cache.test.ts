/**
 * The express fast path for cache hits (`cachedAnswerTo`) must find exactly the entries
 * the yoga plugin stored for the same request: same user, Accept header, query text,
 * operation name, variables and extensions. Anything else is a miss, left to yoga.
 */
import type { Request } from "express";
import { describe, expect, it } from "vitest";
import { LocalChangeFeed } from "../domain/local-feed.js";
import { TreeRevisions } from "../domain/tree-revisions.js";
import type { Change } from "../shared/changes.js";
import { cacheKey, cachedAnswerTo, ResultCache, type CachedResponse } from "./result-cache.js";

const query = "query Q($id: ID!) { tree(id: $id) { name } }";
const params = { query, operationName: "Q", variables: { id: "t1", deep: { b: 1, a: 2 } } };

function entry(): CachedResponse {
  const body = Buffer.from('{"data":{"tree":{"name":"T"}}}');
  return { body, contentType: "application/json; charset=utf-8", mediaType: "application/json", dependencies: [["t1", 0]], size: body.length };
}

function request(fields: { method?: string; user?: string | null; accept?: string; body?: unknown; url?: string }): Request {
  const user = fields.user === undefined ? "u1" : fields.user;
  return {
    method: fields.method ?? "POST",
    auth: { user: user === null ? null : { _id: user } },
    headers: fields.accept === undefined ? {} : { accept: fields.accept },
    body: fields.body === undefined ? params : fields.body,
    url: fields.url ?? "/",
    originalUrl: fields.url === undefined ? "/graphql" : `/graphql${fields.url}`,
  } as unknown as Request;
}

describe("cachedAnswerTo", () => {
  const feed = new LocalChangeFeed();
  const revisions = new TreeRevisions(feed);
  // As wireChangeFeed (src/domain/context.ts) tells the revisions of each notice.
  feed.subscribeAll((notice) => revisions.hear(notice));
  const cache = new ResultCache(revisions);
  const stored = entry();
  cache.set(cacheKey("u1", "application/json", params), stored);

  it("finds the entry stored for the same request, whatever the order of keys in the variables", () => {
    const reordered = { ...params, variables: { deep: { a: 2, b: 1 }, id: "t1" } };
    expect(cachedAnswerTo(cache, request({ accept: "application/json" }))).toBe(stored);
    expect(cachedAnswerTo(cache, request({ accept: "application/json", body: reordered }))).toBe(stored);
  });

  it("misses for another user, an anonymous caller, another Accept, other variables or operation", () => {
    expect(cachedAnswerTo(cache, request({ accept: "application/json", user: "u2" }))).toBeUndefined();
    expect(cachedAnswerTo(cache, request({ accept: "application/json", user: null }))).toBeUndefined();
    expect(cachedAnswerTo(cache, request({}))).toBeUndefined();
    expect(cachedAnswerTo(cache, request({ accept: "application/graphql-response+json" }))).toBeUndefined();
    expect(cachedAnswerTo(cache, request({ accept: "application/json", body: { ...params, variables: { id: "t2" } } }))).toBeUndefined();
    expect(cachedAnswerTo(cache, request({ accept: "application/json", body: { ...params, operationName: "Other" } }))).toBeUndefined();
  });

  it("finds a GET's answer from its query string, read as yoga reads it", () => {
    const search = (fields: Record<string, string>) => `?${new URLSearchParams(fields)}`;
    const variables = JSON.stringify({ deep: { a: 2, b: 1 }, id: "t1" });
    const get = (url: string) => cachedAnswerTo(cache, request({ accept: "application/json", method: "GET", url }));
    expect(get(search({ query, operationName: "Q", variables }))).toBe(stored);
    // An empty parameter is an absent one, as in yoga.
    expect(get(search({ query, operationName: "Q", variables, extensions: "" }))).toBe(stored);
    expect(get(search({ query, variables }))).toBeUndefined();
    expect(get(search({ query, operationName: "Q", variables: "{not json" }))).toBeUndefined();
    expect(get(search({ query, operationName: "Q", variables: "[1]" }))).toBeUndefined();
    expect(get("")).toBeUndefined();
  });

  it("leaves batches, malformed bodies and GETs without a query to yoga", () => {
    expect(cachedAnswerTo(cache, request({ accept: "application/json", method: "GET" }))).toBeUndefined();
    expect(cachedAnswerTo(cache, request({ accept: "application/json", body: [params] }))).toBeUndefined();
    expect(cachedAnswerTo(cache, request({ accept: "application/json", body: { ...params, variables: '{"id":"t1"}' } }))).toBeUndefined();
    expect(cachedAnswerTo(cache, request({ accept: "application/json", body: { ...params, operationName: 7 } }))).toBeUndefined();
  });

  it("misses once a tree the entry read has moved on", () => {
    // A feed of its own: a change on the shared one would empty the other tests' cache too,
    // and they may run after this one (sequence.shuffle).
    const ownFeed = new LocalChangeFeed();
    const ownRevisions = new TreeRevisions(ownFeed);
    ownFeed.subscribeAll((notice) => ownRevisions.hear(notice));
    const own = new ResultCache(ownRevisions);
    const kept = entry();
    own.set(cacheKey("u1", "application/json", params), kept);
    expect(cachedAnswerTo(own, request({ accept: "application/json" }))).toBe(kept);
    const change: Change = { treeId: "t1", revision: 1, at: "2026-01-01T00:00:00.000Z", userId: null, kind: "card.update", before: [], after: [] };
    ownFeed.publish(change);
    expect(cachedAnswerTo(own, request({ accept: "application/json" }))).toBeUndefined();
  });
});
