/**
 * Serves the bundled browser client (dist/web): its files, and index.html for the client's
 * own pages (`/`, `/trees/:treeId`, `/p/:publicUrl`), which it routes itself.
 */
import path from "node:path";
import express, { Router } from "express";

export function webClient(webDir: string): Router {
  const router = Router();
  const index = path.join(webDir, "index.html");
  const sendIndex: express.RequestHandler = (_req, res, next) => {
    res.set("Cache-Control", "no-cache");
    res.sendFile(index, (err) => err && next(err));
  };
  router.get(["/", "/trees/:treeId", "/p/:publicUrl"], sendIndex);
  router.use(express.static(webDir, { index: false, fallthrough: true }));
  return router;
}
