/**
 * The REST facade under /api: thin routers over the domain, then 404 for unknown paths.
 */
import { Router, type RequestHandler } from "express";
import { observeCommits } from "../domain/commit-observer.js";
import { TREE_REVISION_HEADER } from "../shared/changes.js";
import { NotFoundError } from "../shared/errors.js";
import { cachedBodies } from "../http/compression.js";
import { idempotentWrites } from "../http/idempotency.js";
import type { Tree } from "../shared/records.js";
import { accountRoutes } from "./account-routes.js";
import { cardRoutes, matchTreeCards, treeCardsRead } from "./card-routes.js";
import type { DirectRoute } from "../http/direct-routes.js";
import type { RestDeps } from "./deps.js";
import { eventRoutes } from "./event-routes.js";
import { exportRoutes } from "./export-routes.js";
import { historyRoutes } from "./history-routes.js";
import { openApiDocument } from "./openapi.js";
import { presenceRoutes } from "./presence-routes.js";
import { openApiPage } from "./openapi-page.js";
import { requireDocumentedBodies } from "./required-bodies.js";
import { scriptRoutes } from "./script-routes.js";
import { treeRoutes } from "./tree-routes.js";

/**
 * Runs the rest of a write request with an observer that answers the revision of each change
 * it commits as `X-Tree-Revision` (the last one, should there be more). Set when the change
 * is committed, before the route writes its answer.
 */
const answerRevisions: RequestHandler = (req, res, next) => {
  if (req.method === "GET" || req.method === "HEAD") return next();
  const observer = (change: { revision: number }) => {
    if (!res.headersSent) res.setHeader(TREE_REVISION_HEADER, String(change.revision));
  };
  // express.json (raw-body) keeps the async context across reading the body, so the
  // observer is still there when the route commits (a large import shows it: revert.test.ts).
  observeCommits(observer, next);
};

/** Where a cookie session starts or ends: its answer (a Set-Cookie) is not one to replay, so a key is ignored. */
const SESSION_PATHS = new Set(["/signup", "/login", "/logout"]);

/** `parse`, then `then`: a body parser followed by the step that needs the body. */
function followedBy(parse: RequestHandler, then: RequestHandler): RequestHandler {
  return (req, res, next) => parse(req, res, (err?: unknown) => (err ? next(err) : then(req, res, next)));
}

/**
 * The REST router, with the routes it also lists as direct routes (src/http/direct-routes.ts):
 * the same handlers, for requests the router would give them.
 */
export function restApi(rest: RestDeps): Router & { direct: DirectRoute[] } {
  const router = Router();
  const readModel = rest.ctx.readModel;
  // A tree written in bulk (an import): its card list's body and fast gzip copy are made once
  // the writes pause, not for its next reader (the writer opening it: issue 27).
  readModel.prepareAfterBulkWrites((snapshot) => void cachedBodies.prepare(snapshot.json().body));
  const idempotent = idempotentWrites(rest.ctx, { logger: rest.logger, applies: (req) => !SESSION_PATHS.has(req.path) });
  const deps = {
    ...rest,
    jsonLimit: followedBy(rest.jsonLimit, idempotent),
    importLimit: followedBy(rest.importLimit, idempotent),
    idempotent,
    cardsJson: { forTree: async (tree: Tree) => (await readModel.read(tree)).json(), held: (tree: Tree) => readModel.readHeld(tree)?.json() },
  };
  router.get("/openapi.json", (_req, res) => {
    res.json(openApiDocument());
  });
  router.get("/docs", (_req, res) => {
    res.type("html").send(openApiPage());
  });
  router.use(requireDocumentedBodies());
  router.use(answerRevisions);
  router.use(accountRoutes(deps));
  router.use(treeRoutes(deps));
  router.use(historyRoutes(deps));
  router.use(cardRoutes(deps));
  router.use(exportRoutes(deps));
  router.use(eventRoutes(deps));
  router.use(presenceRoutes(deps));
  router.use(scriptRoutes(deps));
  router.use(() => {
    throw new NotFoundError("This API path");
  });
  // The router's steps before cardRoutes (the body check, answerRevisions) do nothing for a
  // GET, so the direct line is the route's handler alone.
  const direct: DirectRoute[] = [{ match: matchTreeCards, handlers: [treeCardsRead(deps)] }];
  return Object.assign(router, { direct });
}
