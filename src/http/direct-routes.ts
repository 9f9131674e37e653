/**
 * Direct routes (issue 27): the hottest reads, answered by the very handlers express runs for
 * them, called one after another in a straight line instead of through express's router.
 *
 * Through the router, a cached card list passed some thirty layers (every app-level
 * middleware, the /api mount, each REST sub-router's stack, each layer's path match and
 * `next()`), plus the streaming compression middleware's wrappers of `res.write`/`end`, which
 * never act on a cached body (it goes out already compressed, or marked to be sent as it
 * is). On the 20,020-card list that work was more than the answer's own: the compressed
 * read ran at a third of a bare node:http server sending the same bytes.
 *
 * Nothing here decides anything about a request. A direct route is the list of handlers the
 * router would run for it: the app's every-request steps (security headers, the request log,
 * closing connections while stopping), the mount's steps (who is calling), and the route's
 * own handler, all the same functions express is given (src/app.ts builds both from one
 * list). Errors go to the same error handler. The request and response get express's
 * prototypes first, as `app.handle` gives them, so `req.ip` (TRUST_PROXY), `req.get`,
 * `res.set` and the rest behave as they do under express. A request no direct route takes
 * is left to express untouched: `handle` answers false before reading anything.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ErrorRequestHandler, Express, NextFunction, Request, RequestHandler, Response } from "express";
import type { Logger } from "./logger.js";

/** One route, relative to the mount it is listed under. */
export interface DirectRoute {
  /**
   * The route's params when it takes this request: `path` is the request target below the
   * mount (with its query string), exactly as express's router would match it for the same
   * handler; null otherwise (the request then goes to express).
   */
  match(method: string, path: string): Record<string, string> | null;
  /** What the router runs for it below the mount, in order; the last one answers. */
  // `any` params, as in src/rest/deps.ts: a route's handler is typed with its own params.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  handlers: readonly RequestHandler<any>[];
}

/** Routes under one mount point (`/api`), with the steps the mount runs before them. */
export interface DirectMount {
  prefix: string;
  steps: readonly RequestHandler[];
  routes: readonly DirectRoute[];
}

export interface DirectRoutes {
  /** Answers the request and returns true, or returns false having touched nothing. */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  /** Requests answered so far (tests check that the direct line was the one taken). */
  readonly answered: number;
}

export function directRoutes(
  app: Express,
  everyRequest: readonly RequestHandler[],
  mounts: readonly DirectMount[],
  onError: ErrorRequestHandler,
  logger: Logger,
): DirectRoutes {
  // Each route's whole line of handlers, built once.
  const lines = mounts.map((mount) => ({
    prefix: `${mount.prefix}/`,
    cut: mount.prefix.length,
    routes: mount.routes.map((route) => ({ match: route.match, line: [...everyRequest, ...mount.steps, ...route.handlers] })),
  }));
  let answered = 0;
  return {
    get answered() {
      return answered;
    },
    handle(req, res) {
      const url = req.url ?? "";
      const method = req.method ?? "";
      for (const mount of lines) {
        if (!url.startsWith(mount.prefix)) continue;
        const below = url.slice(mount.cut);
        for (const route of mount.routes) {
          const params = route.match(method, below);
          if (!params) continue;
          answered++;
          run(adopt(app, req, res, params), res as Response, route.line, onError, logger);
          return true;
        }
      }
      return false;
    },
  };
}

/** What `app.handle` and the router do to a request before its first handler (express 5). */
function adopt(app: Express, req: IncomingMessage, res: ServerResponse, params: Record<string, string>): Request {
  const request = req as Request;
  const response = res as Response;
  request.res = response;
  response.req = request;
  // Built with express's prototypes in their chain by the server (src/app.ts `requestClasses`): nothing to swap.
  if (!inherits(req, app.request)) Object.setPrototypeOf(req, app.request);
  if (!inherits(res, app.response)) Object.setPrototypeOf(res, app.response);
  response.locals ??= Object.create(null) as Response["locals"];
  request.originalUrl = req.url ?? "";
  request.baseUrl = "";
  request.params = params;
  return request;
}

function inherits(object: object, prototype: object): boolean {
  return Object.prototype.isPrototypeOf.call(prototype, object);
}

/**
 * Runs `line` as express's router runs a route's layers: each handler gets a `next`; an
 * error (thrown, rejected, or passed to `next`) skips to `onError`. A handler calling
 * `next()` past the last one is a bug in the line (the route's handler always answers), so
 * it is answered as an error rather than left hanging.
 */
function run(req: Request, res: Response, line: readonly RequestHandler[], onError: ErrorRequestHandler, logger: Logger): void {
  const fail = (err: unknown) => {
    try {
      onError(err, req, res, (left?: unknown) => lastResort(res, logger, left ?? err));
    } catch (left) {
      lastResort(res, logger, left);
    }
  };
  const step = (index: number): void => {
    const handler = line[index];
    if (!handler) return fail(new Error(`direct route ${req.originalUrl} ran past its last handler`));
    let called = false;
    const next: NextFunction = (err?: unknown) => {
      if (called) return;
      called = true;
      if (err !== undefined && err !== null) fail(err);
      else step(index + 1);
    };
    try {
      const result = handler(req, res, next) as unknown;
      if (isThenable(result)) result.then(undefined, (err: unknown) => next(err ?? new Error("Rejected promise")));
    } catch (err) {
      next(err);
    }
  };
  step(0);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && typeof value === "object" && typeof (value as { then?: unknown }).then === "function";
}

/** The error handler itself failed: what express's final handler would do, without its HTML page. */
function lastResort(res: Response, logger: Logger, err: unknown): void {
  logger.error("error handler failed", { error: String((err as Error)?.stack ?? err) });
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.statusCode = 500;
  res.end();
}
