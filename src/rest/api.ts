/**
 * The REST facade under /api: thin routers over the domain, then 404 for unknown paths.
 */
import { Router } from "express";
import { NotFoundError } from "../shared/errors.js";
import type { Tree } from "../shared/records.js";
import { accountRoutes } from "./account-routes.js";
import { cardRoutes } from "./card-routes.js";
import type { RestDeps } from "./deps.js";
import { eventRoutes } from "./event-routes.js";
import { exportRoutes } from "./export-routes.js";
import { historyRoutes } from "./history-routes.js";
import { openApiDocument } from "./openapi.js";
import { openApiPage } from "./openapi-page.js";
import { scriptRoutes } from "./script-routes.js";
import { treeRoutes } from "./tree-routes.js";

export function restApi(rest: RestDeps): Router {
  const router = Router();
  const readModel = rest.ctx.readModel;
  const deps = { ...rest, cardsJson: { forTree: async (tree: Tree) => (await readModel.read(tree)).json() } };
  router.get("/openapi.json", (_req, res) => {
    res.json(openApiDocument());
  });
  router.get("/docs", (_req, res) => {
    res.type("html").send(openApiPage());
  });
  router.use(accountRoutes(deps));
  router.use(treeRoutes(deps));
  router.use(historyRoutes(deps));
  router.use(cardRoutes(deps));
  router.use(exportRoutes(deps));
  router.use(eventRoutes(deps));
  router.use(scriptRoutes(deps));
  router.use(() => {
    throw new NotFoundError("This API path");
  });
  return router;
}
