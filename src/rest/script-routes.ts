/**
 * A user's own browser scripts (docs/scripting.md, "Your scripts on the server"): list, add,
 * change, remove, and `GET /scripts/:scriptId.js`, the script itself as a JavaScript file
 * from this origin, which is what lets a tree page load it under `script-src 'self'`.
 */
import { execute } from "../domain/command.js";
import { createHash } from "node:crypto";
import { Router, type RequestHandler } from "express";
import { requireUser } from "../auth/middleware.js";
import { jsonBody } from "../http/json-body.js";
import { presentScript } from "../domain/presenters.js";
import { createScript, deleteScript, listScripts, readScript, updateScript } from "../domain/user-scripts.js";
import type { RouteDeps } from "./deps.js";

/** Room in a body for a script's name and flags beside its text. */
const SCRIPT_BODY_ROOM = 16 * 1024;
/** What one character of a script may cost in JSON (`\u0001`): its size limit is in UTF-8 bytes. */
const WORST_JSON_BYTES = 6;

export function scriptRoutes({ ctx, idempotent }: RouteDeps): Router {
  const router = Router();
  // Sized from the script limit, not the ordinary JSON limit: a script at its limit fits
  // however the client escapes it; the command then checks the script's own size (413).
  // `any` params, as in deps.ts: a loosely typed handler would widen `:scriptId` to string[].
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const scriptBody: RequestHandler<any> = jsonBody(ctx.config.limits.userScriptBytes * WORST_JSON_BYTES + SCRIPT_BODY_ROOM);

  router.get("/scripts", async (req, res) => {
    res.json((await listScripts(ctx, requireUser(req))).map(presentScript));
  });

  router.post("/scripts", scriptBody, idempotent, async (req, res) => {
    res.status(201).json(presentScript(await execute(ctx, requireUser(req), createScript, {}, req.body ?? {})));
  });

  router.get("/scripts/:scriptId.js", async (req, res) => {
    const script = await readScript(ctx, requireUser(req), req.params.scriptId);
    const etag = `"${createHash("sha256").update(`${script._id}:${script.updatedAt}`).digest("base64url").slice(0, 22)}"`;
    // Only its owner's browser may keep it, and must ask again before using it (it may have
    // been changed or disabled meanwhile); nosniff (set on every response) makes the browser
    // run it only as the JavaScript it is declared to be.
    res.set({ "Cache-Control": "private, no-cache", ETag: etag, "Cross-Origin-Resource-Policy": "same-origin" });
    if (req.get("if-none-match") === etag) {
      res.status(304).end();
      return;
    }
    res.type("text/javascript; charset=utf-8").send(script.body);
  });

  router.put("/scripts/:scriptId", scriptBody, idempotent, async (req, res) => {
    res.json(presentScript(await execute(ctx, requireUser(req), updateScript, { scriptId: req.params.scriptId }, req.body ?? {})));
  });

  router.delete("/scripts/:scriptId", idempotent, async (req, res) => {
    await execute(ctx, requireUser(req), deleteScript, { scriptId: req.params.scriptId }, undefined);
    res.status(204).end();
  });

  return router;
}
