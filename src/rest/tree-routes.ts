/**
 * Trees, their collaborators, clones and the public read.
 */
import { execute } from "../domain/command.js";
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

export function treeRoutes({ ctx, jsonLimit, importLimit, idempotent, cardsJson }: RouteDeps): Router {
  const router = Router();

  router.get("/public/:publicUrl", async (req, res) => {
    const tree = await findPublicTree(ctx, req.auth.user, req.params.publicUrl);
    const cards = await cardsJson.forTree(tree);
    // `{"tree": ..., "cards": [...]}` around the cached cards body, without copying it.
    const head = Buffer.from(`{"tree":${JSON.stringify(presentTree(tree))},"cards":`);
    const etag = `"${cards.etag.slice(1, -1)}.${createHash("sha256").update(head).digest("base64url")}"`;
    await sendJsonWithEtag(req, res, etag, [head, cards.body, Buffer.from("}")]);
  });

  router.get("/trees", async (req, res) => {
    res.json((await listTrees(ctx, requireUser(req))).map(presentTree));
  });

  router.post("/trees", importLimit, async (req, res) => {
    res.status(201).json(presentTree(await execute(ctx, requireUser(req), createTree, {}, req.body ?? {})));
  });

  router.put("/trees/:treeId", jsonLimit, async (req, res) => {
    res.json(presentTree(await execute(ctx, requireUser(req), updateTree, { treeId: req.params.treeId }, req.body ?? {})));
  });

  router.delete("/trees/:treeId", idempotent, async (req, res) => {
    await execute(ctx, requireUser(req), deleteTree, { treeId: req.params.treeId }, undefined);
    res.status(204).end();
  });

  router.post("/trees/:treeId/clone", jsonLimit, async (req, res) => {
    res.status(201).json(presentTree(await execute(ctx, requireUser(req), cloneTree, { treeId: req.params.treeId }, undefined)));
  });

  router.post("/trees/:publicTreeId/clonePublic", jsonLimit, async (req, res) => {
    res.status(201).json(presentTree(await execute(ctx, requireUser(req), clonePublicTree, { idOrUrl: req.params.publicTreeId }, undefined)));
  });

  router.get("/trees/:treeId/collaborators", async (req, res) => {
    res.json(await listCollaborators(ctx, requireUser(req), req.params.treeId));
  });

  router.post("/trees/:treeId/collaborators", jsonLimit, async (req, res) => {
    res.status(201).json(await execute(ctx, requireUser(req), addCollaborator, { treeId: req.params.treeId }, req.body ?? {}));
  });

  router.delete("/trees/:treeId/collaborators/:userId", idempotent, async (req, res) => {
    await execute(ctx, requireUser(req), removeCollaborator, { treeId: req.params.treeId, userId: req.params.userId }, undefined);
    res.status(204).end();
  });

  return router;
}
