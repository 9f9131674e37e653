/**
 * Trees, their collaborators, clones and the public read.
 */
import { Router } from "express";
import { requireUser } from "../auth/middleware.js";
import { addCollaborator, listCollaborators, removeCollaborator } from "../domain/collaborators.js";
import { createHash } from "node:crypto";
import { presentTree } from "../domain/presenters.js";
import {
  clonePublicTree,
  cloneTree,
  createTree,
  deleteTree,
  findPublicTree,
  listTrees,
  updateTree,
} from "../domain/trees.js";
import { sendJsonWithEtag } from "../http/etag.js";
import type { RouteDeps } from "./deps.js";

export function treeRoutes({ ctx, jsonLimit, importLimit, cardsJson }: RouteDeps): Router {
  const router = Router();

  router.get("/public/:publicUrl", async (req, res) => {
    const tree = await findPublicTree(ctx, req.auth.user, req.params.publicUrl);
    const cards = await cardsJson.forTree(tree);
    // `{"tree": ..., "cards": [...]}` around the cached cards body, without copying it.
    const head = Buffer.from(`{"tree":${JSON.stringify(presentTree(tree))},"cards":`);
    const etag = `"${cards.etag.slice(1, -1)}.${createHash("sha256").update(head).digest("base64url")}"`;
    sendJsonWithEtag(req, res, etag, [head, cards.body, Buffer.from("}")]);
  });

  router.get("/trees", async (req, res) => {
    res.json((await listTrees(ctx, requireUser(req))).map(presentTree));
  });

  router.post("/trees", importLimit, async (req, res) => {
    res.status(201).json(presentTree(await createTree(ctx, requireUser(req), req.body ?? {})));
  });

  router.put("/trees/:treeId", jsonLimit, async (req, res) => {
    res.json(presentTree(await updateTree(ctx, requireUser(req), req.params.treeId, req.body ?? {})));
  });

  router.delete("/trees/:treeId", async (req, res) => {
    await deleteTree(ctx, requireUser(req), req.params.treeId);
    res.status(204).end();
  });

  router.post("/trees/:treeId/clone", jsonLimit, async (req, res) => {
    res.status(201).json(presentTree(await cloneTree(ctx, requireUser(req), req.params.treeId)));
  });

  router.post("/trees/:publicTreeId/clonePublic", jsonLimit, async (req, res) => {
    res.status(201).json(presentTree(await clonePublicTree(ctx, requireUser(req), req.params.publicTreeId)));
  });

  router.get("/trees/:treeId/collaborators", async (req, res) => {
    res.json(await listCollaborators(ctx, requireUser(req), req.params.treeId));
  });

  router.post("/trees/:treeId/collaborators", jsonLimit, async (req, res) => {
    res.status(201).json(await addCollaborator(ctx, requireUser(req), req.params.treeId, req.body ?? {}));
  });

  router.delete("/trees/:treeId/collaborators/:userId", async (req, res) => {
    await removeCollaborator(ctx, requireUser(req), req.params.treeId, req.params.userId);
    res.status(204).end();
  });

  return router;
}
