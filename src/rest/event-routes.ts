/**
 * `GET /api/trees/:treeId/events`: the tree's changes as Server-Sent Events (SPEC §10). Each
 * change is `id: <revision>`, `event: change`, `data: <ChangeView JSON>`; a reader too far
 * behind gets `event: reset` with `{"revision": n}` and the stream ends (reload the tree,
 * then follow again with `?since=n`). `Last-Event-ID` (sent by EventSource when it
 * reconnects) or `?since=` resumes after that revision; the header wins, being the later.
 * What is promised (order, no gap, no duplicate, who may follow) is src/domain/live.ts's.
 */
import { Router, type Request } from "express";
import { clientAddress } from "../auth/middleware.js";
import { accessOf, followTree, presentChange } from "../domain/live.js";
import { ValidationError } from "../shared/errors.js";
import type { Change } from "../shared/changes.js";
import { eventFrame, SseHub, type SseFrame } from "../http/sse.js";
import type { RouteDeps } from "./deps.js";

/** How long EventSource waits before reconnecting after the stream ends. */
const RETRY_MS = 2000;
const REVISION = /^\d{1,15}$/;

/** Each change's event, serialized and framed once: the same bytes go to all its readers. */
const frames = new WeakMap<Change, SseFrame>();

function frameOf(change: Change): SseFrame {
  let frame = frames.get(change);
  if (frame === undefined) {
    frames.set(change, (frame = eventFrame({ id: change.revision, event: "change", data: JSON.stringify(presentChange(change)) })));
  }
  return frame;
}

/** The revision to resume after, if the request names one. @throws ValidationError when it is not a whole number >= 0. */
export function resumeFrom(req: Request): number | undefined {
  const header = req.get("last-event-id");
  const query = req.query.since;
  const [value, path] = header !== undefined && header !== "" ? [header, "Last-Event-ID"] : [query, "since"];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !REVISION.test(value.trim())) {
    throw new ValidationError(`${path} must be a revision: a whole number, 0 or more.`, [
      { path, message: "must be a whole number, 0 or more" },
    ]);
  }
  return Number(value.trim());
}

export function eventRoutes({ ctx }: RouteDeps): Router {
  const router = Router();
  const hub = new SseHub(ctx.config.live);

  router.get("/trees/:treeId/events", async (req, res) => {
    const since = resumeFrom(req);
    const stream = await followTree(ctx, req.auth.user, req.params.treeId, {
      since,
      address: clientAddress(req),
      access: accessOf(req.auth.user, req.auth.session),
    });
    // Gone while the stream was being opened: nothing will tell it later.
    if (req.socket.destroyed) {
      stream.end("closed");
      return;
    }
    const sse = hub.start(req, res, RETRY_MS);
    sse.onClose(() => stream.end("closed"));
    // Each event is written as it comes (no promise per stream per change, see deliverTo);
    // once the stream ends (reset, revoked, the reader gone), so does the response.
    stream.deliverTo((event) =>
      event.type === "change"
        ? sse.sendFrame(frameOf(event.change))
        : sse.send({ event: "reset", data: JSON.stringify({ revision: event.revision }) }),
    );
    stream.onEnd(() => sse.close());
  });

  return router;
}
