/**
 * `GET /api/export/:treeId.:format`: a file download of the tree or part of it.
 */
import { Router } from "express";
import { exportTreeAs } from "../domain/export.js";
import { contentDisposition } from "../http/content-disposition.js";
import type { RestDeps } from "./deps.js";

export function exportRoutes({ ctx }: RestDeps): Router {
  const router = Router();
  router.get("/export/:treeId.:format", async (req, res) => {
    const query = Object.fromEntries(Object.entries(req.query).filter(([, v]) => typeof v === "string"));
    const result = await exportTreeAs(ctx, req.auth.user, req.params.treeId, req.params.format, query);
    res.set({
      "Content-Type": result.contentType,
      "Content-Disposition": contentDisposition(result.filename),
      "Cache-Control": "no-store",
    });
    res.send(typeof result.body === "string" ? result.body : Buffer.from(result.body));
  });
  return router;
}
