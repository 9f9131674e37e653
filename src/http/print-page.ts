/**
 * The print view (SPEC §14): `/trees/:treeId/print` lays the tree out as one document, in
 * tree order, to print from the browser. It is the html export (its Markdown rendered and
 * sanitized, its print stylesheet keeping each card on one page where it fits) served as a
 * page instead of a download, to whoever may read the tree: members, and anyone for a public
 * tree. The export flags `cardId`, `column` and `leaves` narrow it as they narrow an export.
 *
 * A page, not an API: refusals come as a short HTML page with the same status the API gives
 * (404 for a tree the caller cannot see), and a 401 carries no `WWW-Authenticate`, so the
 * browser shows the page (with a way to sign in) rather than its own password prompt.
 */
import { Router, type RequestHandler } from "express";
import type { DomainContext } from "../domain/context.js";
import { exportTreeAs } from "../domain/export.js";
import { toDomainError, STATUS } from "./error-response.js";

const FLAGS = ["cardId", "column", "leaves"] as const;

export function printPage(ctx: DomainContext, who: RequestHandler): Router {
  const router = Router();
  router.get("/trees/:treeId/print", who, async (req, res) => {
    const query: Record<string, string> = {};
    for (const flag of FLAGS) if (typeof req.query[flag] === "string") query[flag] = req.query[flag];
    try {
      const page = await exportTreeAs(ctx, req.auth.user, String(req.params.treeId), "html", query);
      res.set({ "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" }).send(page.body);
    } catch (err) {
      const error = toDomainError(err);
      if (!error) throw err;
      const signIn = error.code === "unauthenticated" ? `<p><a href="/">Sign in</a>, then open this page again.</p>` : "";
      res
        .status(STATUS[error.code])
        .set({ "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" })
        .send(`<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n<title>Cardtree</title>\n</head>\n<body>\n<p>${escapeHtml(error.message)}</p>\n${signIn}</body>\n</html>\n`);
    }
  });
  return router;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (char) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[char]!);
}
