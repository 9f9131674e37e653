/**
 * GraphiQL on GET /graphql, served from this process. Yoga's own page loads GraphiQL from a
 * CDN with inline scripts, which the server's Content-Security-Policy (`script-src 'self'`)
 * blocks and which would not work offline. Here the same GraphiQL build comes from the
 * @graphql-yoga/render-graphiql package as separate same-origin files: the page has no inline
 * script, and the editor's web workers are same-origin files too. The page's only departure
 * from the server's CSP: GraphiQL's stylesheet embeds its fonts as data: URLs, so this one
 * page also allows `font-src data:` (fonts cannot run code).
 */
import { Router, type Response } from "express";
import type { GraphiQLOptions } from "graphql-yoga";
import { NotFoundError } from "../shared/errors.js";
import { CONTENT_SECURITY_POLICY } from "../http/security-headers.js";

/** Where the assets are served, under the /graphql mount. */
const ASSET_PATH = "/graphiql/";
const ASSET_URL = `/graphql${ASSET_PATH}`;

/**
 * Runs before GraphiQL's bundle: tells its Monaco editor where the worker scripts are, then
 * renders once the bundle has run. The options come from a JSON block of the page.
 */
const START_SCRIPT = `"use strict";
(function () {
  var workers = {
    editorWorkerService: ${JSON.stringify(`${ASSET_URL}editor.worker.js`)},
    json: ${JSON.stringify(`${ASSET_URL}json.worker.js`)},
    graphql: ${JSON.stringify(`${ASSET_URL}graphql.worker.js`)}
  };
  self.MonacoEnvironment = { globalAPI: false, getWorkerUrl: function (_moduleId, label) { return workers[label]; } };
  document.addEventListener("DOMContentLoaded", function () {
    var options = JSON.parse(document.getElementById("graphiql-options").textContent);
    YogaGraphiQL.renderYogaGraphiQL(document.getElementById("root"), options);
  });
})();
`;

type Bundle = typeof import("@graphql-yoga/render-graphiql/graphiql");

/** The bundle is 9 MB of JavaScript: loaded on the first GraphiQL visit, not at start-up. */
let bundle: Promise<Bundle> | undefined;
function loadBundle(): Promise<Bundle> {
  bundle ??= import("@graphql-yoga/render-graphiql/graphiql");
  return bundle;
}

const ASSETS: Record<string, { type: string; body: (b: Bundle) => string }> = {
  "start.js": { type: "text/javascript", body: () => START_SCRIPT },
  "graphiql.js": { type: "text/javascript", body: (b) => b.js },
  "graphiql.css": { type: "text/css", body: (b) => b.css },
  "editor.worker.js": { type: "text/javascript", body: (b) => b.editorWorkerService },
  "json.worker.js": { type: "text/javascript", body: (b) => b.jsonWorker },
  "graphql.worker.js": { type: "text/javascript", body: (b) => b.graphqlWorker },
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Yoga's `renderGraphiQL`: the page, with the options as inert JSON rather than a script. */
export function renderGraphiQLPage(options: GraphiQLOptions): string {
  // "<" escaped so that no value can close the JSON block early.
  const json = JSON.stringify(options).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(options.title ?? "GraphiQL")}</title>
<link rel="stylesheet" href="${ASSET_URL}graphiql.css">
<script src="${ASSET_URL}start.js"></script>
<script src="${ASSET_URL}graphiql.js"></script>
</head>
<body id="body" class="no-focus-outline">
<noscript>GraphiQL needs JavaScript.</noscript>
<div id="root"></div>
<script type="application/json" id="graphiql-options">${json}</script>
</body>
</html>
`;
}

function send(res: Response, type: string, body: string): void {
  // Cached for a day: they change only when the package is upgraded.
  res.set({ "Content-Type": `${type}; charset=utf-8`, "Cache-Control": "public, max-age=86400" });
  res.send(body);
}

const PAGE_POLICY = `${CONTENT_SECURITY_POLICY}; font-src 'self' data:`;

/**
 * GET /graphql/graphiql/<file>: the assets the page above refers to; and on GET /graphql
 * from a browser (yoga's own test for showing GraphiQL), the page's policy.
 */
export function graphiqlRoutes(): Router {
  const router = Router();
  router.get("/", (req, res, next) => {
    if (req.get("accept")?.includes("text/html")) res.set("Content-Security-Policy", PAGE_POLICY);
    next();
  });
  router.get(`${ASSET_PATH}:file`, async (req, res) => {
    const asset = Object.hasOwn(ASSETS, req.params.file) ? ASSETS[req.params.file] : undefined;
    if (!asset) throw new NotFoundError("This GraphiQL file");
    send(res, asset.type, asset.body(await loadBundle()));
  });
  return router;
}
