/**
 * The GraphQL result cache: the response bytes of recent queries, so that asking again for
 * an unchanged tree costs about what the REST read of its cached cards costs, not an
 * execution (~150 ms for 10,000 cards) and a JSON.stringify of megabytes (~20 ms). An entry
 * is labelled with the revision of every tree its execution read, as the request's store
 * noted them (src/graphql/result-dependencies.ts), and is served only while each of those
 * trees is still at that revision by the change feed (src/domain/tree-revisions.ts). No
 * resolver records anything and no list says which fields may be cached: a result is
 * cacheable when everything its execution read is tracked by a tree revision.
 *
 * A yoga plugin, at these points of a request:
 * - `onParams`: the request's key is looked up. A current hit skips parsing, validation and
 *   execution; `onResultProcess` then sends its bytes with the content type they were sent
 *   with. A stale entry is dropped.
 * - `onExecute`: only a query is a candidate (never a mutation; a subscription goes through
 *   `onSubscribe`, which lets any identical request waiting on it go on).
 * - `onExecuteDone`: only a result without errors whose reads were all tracked goes on.
 * - `onResultProcess` also drops a candidate whose final result has errors after all.
 * - `onResponse`: the bytes yoga produced (status 200, a JSON media type) are stored with the
 *   revisions noted during the execution.
 * While a miss is being computed, identical requests (same key) wait in `onParams` for it
 * and are answered from what it stored; if it stored nothing, they execute as usual.
 *
 * The key is the caller's user id (or anonymous), the Accept header (which decides the
 * content type yoga answers with), the exact document text, the operation name, and the
 * variables and extensions as canonical JSON. Authentication runs on every request before
 * /graphql (src/auth/middleware.ts) and the user is part of the key, so the cache holds
 * bytes, never rights: a user only ever gets bytes computed for that same user, and a
 * permission change is a tree change, which moves the revision.
 */
import { getOperationAST } from "graphql";
import type { Request as ExpressRequest, Response as ExpressResponse } from "express";
import { isAsyncIterable, type Plugin } from "graphql-yoga";
import type { TreeRevisions } from "../domain/tree-revisions.js";
import type { GraphQLContext } from "./context.js";
import { ResultDependencies } from "./result-dependencies.js";

/** A separate budget from the REST cards cache's; a 10,000-card whole tree is ~3.5 MB. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

/** The media types of yoga's regular (single JSON document) responses. */
const JSON_MEDIA_TYPES = new Set(["application/json", "application/graphql-response+json"]);

export interface CachedResponse {
  body: Buffer<ArrayBuffer>;
  /** As sent: `application/json; charset=utf-8`. */
  contentType: string;
  /** Without parameters, as yoga's result processors name it. */
  mediaType: string;
  dependencies: [treeId: string, revision: number][];
  /** Body and key, for the budget. */
  size: number;
}

/** Recent responses, least recently used evicted first once over the byte budget. */
export class ResultCache {
  /** Least recently used first (a Map iterates in insertion order). */
  private readonly entries = new Map<string, CachedResponse>();
  private bytes = 0;

  constructor(
    private readonly revisions: TreeRevisions,
    private readonly maxBytes = DEFAULT_MAX_BYTES,
  ) {}

  /** The entry for `key` if every tree it was computed from is still at that revision. */
  get(key: string): CachedResponse | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (!ResultDependencies.current(entry.dependencies, this.revisions)) {
      this.bytes -= entry.size;
      return undefined;
    }
    this.entries.set(key, entry);
    return entry;
  }

  set(key: string, entry: CachedResponse): void {
    const previous = this.entries.get(key);
    if (previous) {
      this.entries.delete(key);
      this.bytes -= previous.size;
    }
    if (entry.size > this.maxBytes) return;
    this.entries.set(key, entry);
    this.bytes += entry.size;
    for (const [oldKey, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldKey);
      this.bytes -= old.size;
    }
  }
}

interface GraphQLParamsLike {
  query?: string;
  operationName?: string | null;
  variables?: unknown;
  extensions?: unknown;
}

/** JSON with object keys sorted at every level, so equal values give equal text. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value ?? null, (_key, inner: unknown) =>
    inner !== null && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

export function cacheKey(userId: string | null, accept: string | null, params: GraphQLParamsLike & { query: string }): string {
  return JSON.stringify([
    userId,
    accept,
    params.query,
    params.operationName ?? null,
    canonicalJson(params.variables),
    canonicalJson(params.extensions),
  ]);
}

const isRecordOrAbsent = (value: unknown) => value == null || (typeof value === "object" && !Array.isArray(value));

/**
 * The cached answer to an express request that is a single GraphQL request, if there is a
 * current one; undefined otherwise (the request then goes to yoga as usual). A POST's JSON
 * body, or a GET's query string read as yoga reads it (`query`, `operationName`, and
 * `variables` and `extensions` as JSON; an empty one is absent). The key is the plugin's
 * own, from the same fields yoga would take, so this only skips yoga's machinery for a hit:
 * on the 10,000-card tree, yoga's fetch-API response made hits slower than the REST read,
 * and their p99 much worse; and a hit sent here goes out as its compressed copy, made once
 * per result (a hit through yoga was compressed again on every request). Anything unusual
 * (a batch, variables that are not an object or not JSON) is left to yoga.
 */
export function cachedAnswerTo(cache: ResultCache, req: ExpressRequest): CachedResponse | undefined {
  if (!req.auth) return undefined;
  const params = req.method === "POST" ? postParams(req.body) : req.method === "GET" ? getParams(req.originalUrl ?? req.url) : undefined;
  if (!params || typeof params.query !== "string") return undefined;
  if (params.operationName != null && typeof params.operationName !== "string") return undefined;
  if (!isRecordOrAbsent(params.variables) || !isRecordOrAbsent(params.extensions)) return undefined;
  const key = cacheKey(req.auth.user?._id ?? null, req.headers.accept ?? null, { ...params, query: params.query });
  return cache.get(key);
}

function postParams(body: unknown): GraphQLParamsLike | undefined {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return undefined;
  return body as GraphQLParamsLike;
}

function getParams(url: string): GraphQLParamsLike | undefined {
  const at = url.indexOf("?");
  if (at < 0) return undefined;
  const search = new URLSearchParams(url.slice(at + 1));
  try {
    const json = (name: string): unknown => {
      const text = search.get(name);
      return text ? JSON.parse(text) : undefined;
    };
    return {
      query: search.get("query") || undefined,
      operationName: search.get("operationName") || undefined,
      variables: json("variables"),
      extensions: json("extensions"),
    };
  } catch {
    return undefined;
  }
}

/** The yoga plugin described in the module header. */
export function resultCachePlugin(cache: ResultCache): Plugin<GraphQLContext, { req: ExpressRequest; res: ExpressResponse }> {
  /** Requests that missed, by yoga's Request object, with their key. */
  const misses = new WeakMap<Request, string>();
  /** Misses whose result may be stored once yoga has produced the response. */
  const storable = new WeakMap<Request, { key: string; dependencies: [string, number][] }>();
  /** The placeholder result of each hit, with the entry to send for it. */
  const hits = new WeakMap<object, CachedResponse>();
  /**
   * Misses being computed, by key. An identical request arriving meanwhile waits for the
   * first instead of executing too: after an edit, or at a cold start, eight clients asking
   * for a 10,000-card tree would otherwise run eight executions of ~200 ms back to back on
   * one core (wrk's 2 s timeouts were hit that way) and hold eight results in memory.
   */
  const running = new Map<string, Promise<void>>();
  /** Ends a leading miss's hold on its key; called at the latest when its response closes. */
  const releases = new WeakMap<Request, () => void>();

  const lead = (request: Request, key: string, res: ExpressResponse) => {
    let wake!: () => void;
    const done = new Promise<void>((resolve) => (wake = resolve));
    running.set(key, done);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      if (running.get(key) === done) running.delete(key);
      wake();
    };
    releases.set(request, release);
    // However the request ends (an error before execution, a client gone), waiters go on.
    res.once("close", release);
  };
  /** Waiters go on as soon as the leader's answer is stored, or known not to be. */
  const release = (request: Request) => releases.get(request)?.();

  return {
    async onParams({ params, request, context, setResult }) {
      // Without the authentication middleware's verdict there is no user to key by.
      if (typeof params.query !== "string" || !context.req.auth) return;
      const key = cacheKey(context.req.auth.user?._id ?? null, request.headers.get("accept"), {
        ...params,
        query: params.query,
      });
      let entry = cache.get(key);
      const leader = entry ? undefined : running.get(key);
      if (leader) {
        await leader;
        entry = cache.get(key);
      }
      if (entry) {
        const placeholder = {};
        hits.set(placeholder, entry);
        setResult(placeholder);
        return;
      }
      // The leader's answer was not stored (not cacheable, an error): execute as usual.
      misses.set(request, key);
      if (!running.has(key)) lead(request, key, context.res);
    },

    onExecute({ args }) {
      const request = args.contextValue.request;
      const key = misses.get(request);
      if (key === undefined) return;
      misses.delete(request);
      if (getOperationAST(args.document, args.operationName)?.operation !== "query") return release(request);
      const dependencies = args.contextValue.dependencies;
      return {
        onExecuteDone({ result }) {
          if (isAsyncIterable(result) || (result.errors?.length ?? 0) > 0 || !dependencies.cacheable) return release(request);
          storable.set(request, { key, dependencies: dependencies.snapshot() });
        },
      };
    },

    onSubscribe({ args }) {
      // Never stored; identical subscriptions must not wait for this one to end.
      const request = args.contextValue.request;
      misses.delete(request);
      release(request);
    },

    onResultProcess({ request, result, setResultProcessor }) {
      // The result as every plugin left it: one that gained an error is not stored.
      if (storable.has(request) && (Array.isArray(result) || isAsyncIterable(result) || (result.errors?.length ?? 0) > 0)) {
        storable.delete(request);
        release(request);
      }
      const entry = typeof result === "object" && result !== null ? hits.get(result) : undefined;
      if (!entry) return;
      setResultProcessor(
        (_result, fetchAPI) =>
          new fetchAPI.Response(entry.body, { status: 200, headers: { "Content-Type": entry.contentType } }),
        entry.mediaType,
      );
    },

    async onResponse({ request, response, setResponse, fetchAPI }) {
      const pending = storable.get(request);
      if (!pending) return release(request);
      storable.delete(request);
      const contentType = response.headers.get("content-type");
      const mediaType = contentType?.split(";")[0]?.trim() ?? "";
      if (response.status !== 200 || contentType === null || !JSON_MEDIA_TYPES.has(mediaType)) return release(request);
      const body = Buffer.from(await response.arrayBuffer());
      cache.set(pending.key, {
        body,
        contentType,
        mediaType,
        dependencies: pending.dependencies,
        size: body.length + pending.key.length * 2,
      });
      release(request);
      setResponse(new fetchAPI.Response(body, { status: response.status, headers: response.headers }));
    },
  };
}
