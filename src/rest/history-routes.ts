/**
 * History (SPEC §10): a tree's changes, a card's versions, the trash, the restores, and the
 * revert of one change (the browser's undo and redo).
 */
import { execute } from "../domain/command.js";
import { Router } from "express";
import { requireUser } from "../auth/middleware.js";
import { cardVersions, restoreCard, restoreTree, revertChange, treeHistory, treeTrash } from "../domain/history.js";
import { presentChange } from "../domain/live.js";
import { presentCard, presentTree } from "../domain/presenters.js";
import { parseInput, revertChangeInput } from "../shared/schemas.js";
import type { RouteDeps } from "./deps.js";

export function historyRoutes({ ctx, jsonLimit, idempotent }: RouteDeps): Router {
  const router = Router();

  router.get("/trees/:treeId/history", async (req, res) => {
    res.json(await treeHistory(ctx, requireUser(req), req.params.treeId, req.query));
  });

  router.get("/trees/:treeId/cards/:cardId/versions", async (req, res) => {
    res.json(await cardVersions(ctx, requireUser(req), req.params.treeId, req.params.cardId, req.query));
  });

  router.get("/trees/:treeId/trash", async (req, res) => {
    res.json(await treeTrash(ctx, requireUser(req), req.params.treeId));
  });

  router.post("/trees/:treeId/restore", jsonLimit, async (req, res) => {
    res.json(presentTree(await execute(ctx, requireUser(req), restoreTree, { treeId: req.params.treeId }, req.body ?? {})));
  });

  router.post("/trees/:treeId/cards/:cardId/restore", idempotent, async (req, res) => {
    const cards = await execute(ctx, requireUser(req), restoreCard, { treeId: req.params.treeId, cardId: req.params.cardId }, undefined);
    res.json(cards.map(presentCard));
  });

  router.post("/trees/:treeId/changes/:revision/revert", jsonLimit, async (req, res) => {
    // The revision is the path's: parsed with the body's fields, and never taken from the body.
    const body = parseInput(revertChangeInput.omit({ revision: true }), req.body ?? {});
    const target = { treeId: req.params.treeId };
    const { tree, change } = await execute(ctx, requireUser(req), revertChange, target, { ...body, revision: req.params.revision });
    res.json({ revision: tree.revision ?? 0, change: change ? presentChange(change) : null });
  });

  return router;
}
