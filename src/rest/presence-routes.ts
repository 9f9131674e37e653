/**
 * Presence on a tree (SPEC §8 "Together", issue 30), collaborators only:
 * `GET /api/trees/:treeId/presence?tab=<tab id>` is a Server-Sent Events stream of who is
 * present (`event: presence`, `data: {total, people: [{tab, userId, name, cardId, editing}]}`,
 * at once and on every change); the tab it names is present while it is open (and its lease
 * holds). `PUT /api/trees/:treeId/presence` `{tab, cardId, editing}` says where the tab is, and
 * that it is still there (every 1.5 s). Nothing of it is stored: src/domain/presence.ts.
 */
import { Router } from "express";
import { requireUser } from "../auth/middleware.js";
import { accessOf } from "../domain/live.js";
import type { PresenceView } from "../domain/presence.js";
import { SseHub } from "../http/sse.js";
import { parseInput, presenceInput, presenceQuery } from "../shared/schemas.js";
import type { RouteDeps } from "./deps.js";

/** How long EventSource waits before reconnecting after the stream ends. */
const RETRY_MS = 1000;

/** Each view's text, serialized once for all its watchers. */
const frames = new WeakMap<PresenceView, string>();

function dataOf(view: PresenceView): string {
  let data = frames.get(view);
  if (data === undefined) frames.set(view, (data = JSON.stringify(view)));
  return data;
}

export function presenceRoutes({ ctx, jsonLimit }: RouteDeps): Router {
  const router = Router();
  const hub = new SseHub(ctx.config.live);

  router.get("/trees/:treeId/presence", async (req, res) => {
    const user = requireUser(req);
    const { tab } = parseInput(presenceQuery, req.query);
    let sse: ReturnType<SseHub["start"]> | null = null;
    let first: PresenceView | null = null;
    const watch = await ctx.presence.watch(user, req.params.treeId, tab, accessOf(user, req.auth.session), (view) => {
      if (sse) {
        if (!sse.send({ event: "presence", data: dataOf(view) })) watch.end("slow");
      } else first = view;
    });
    // Gone while the watch was being opened: nothing will tell it later.
    if (req.socket.destroyed) {
      watch.end("closed");
      return;
    }
    sse = hub.start(req, res, RETRY_MS);
    sse.onClose(() => watch.end("closed"));
    if (first) sse.send({ event: "presence", data: dataOf(first) });
    watch.onEnd(() => sse?.close());
  });

  router.put("/trees/:treeId/presence", jsonLimit, async (req, res) => {
    const user = requireUser(req);
    const update = parseInput(presenceInput, req.body ?? {});
    await ctx.presence.update(user, req.params.treeId, update);
    res.status(204).end();
  });

  return router;
}
