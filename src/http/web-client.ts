/**
 * Serves the bundled browser client: its files, and index.html for the client's own pages
 * (`/`, `/trees/:treeId`, `/p/:publicUrl`, `/settings`), which it routes itself. From a checkout the
 * files are dist/web's; in the single binary (`npm run package`) they are the binary's own
 * SEA assets, listed in `web/files.json` (scripts/package.mjs), and nothing is read from disk.
 * index.html carries the operator's choice on remote images (`REMOTE_IMAGES`) in a
 * `<meta name="cardtree-remote-images">`, which the client reads (src/web/remote-images.ts).
 *
 * Caching (SPEC §13: never a stale app after a deploy): the script, style sheet and typefaces
 * have content-hashed names and are kept a year (`immutable`); index.html, the service worker
 * (`sw.js`, fixed name), the manifest and icons are revalidated on every use.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import sea from "node:sea";
import express, { Router } from "express";
import type { RemoteImagePolicy } from "../config.js";
import { chooseEncoding } from "./compression.js";

/** The asset holding the names of the client's files, each stored as `web/<name>`. */
export const WEB_ASSET_LIST = "web/files.json";

/** `app-<hash>.js`, `app-<hash>.css` and their maps: a name never holds two contents. */
const HASHED = /^\/app-[A-Z0-9]{8,}\.(js|css)(\.map)?$/;
/** The typefaces' files, `<face>-<hash>.woff2` (scripts/build-web.mjs): hashed names too. */
const HASHED_FONT = /^\/[a-z0-9-]+-[A-Z0-9]{8,}\.woff2?$/;

function cacheControl(urlPath: string): string {
  return HASHED.test(urlPath) || HASHED_FONT.test(urlPath) ? "public, max-age=31536000, immutable" : "no-cache";
}

export function webClient(webDir: string, remoteImages: RemoteImagePolicy): Router {
  return sea.isSea() ? embeddedClient(remoteImages) : directoryClient(webDir, remoteImages);
}

/** index.html with the remote-image policy in its head. */
function withPolicy(index: string, remoteImages: RemoteImagePolicy): string {
  return index.replace(/<head>/i, `<head>\n    <meta name="cardtree-remote-images" content="${remoteImages}" />`);
}

/** The pages that draw cards, and so load the cards' renderer at once (src/web/markdown.ts). */
const CARD_PAGES = /^\/(trees|p)\/[^/]+\/?$/;
/** A tree's page, whose cards a worker fetches (src/web/model/card-loader.ts). */
const TREE_PAGE = /^\/trees\/[^/]+\/?$/;

/**
 * index.html for `pathname`: on a tree or public page, the renderer's chunks (named by the
 * build in a comment, scripts/build-web.mjs) become `modulepreload` links, fetched beside the
 * app's script instead of after it has run (issue 27, the tree page's LCP on a phone); on a
 * tree page the cards' worker's script is prefetched too, so that the worker boot starts
 * finds it in the cache and asks for the cards at once. The log-in page and the others fetch
 * neither.
 */
export function pageFor(index: string, pathname: string): string {
  if (!CARD_PAGES.test(pathname)) return index;
  const page = index.replace(/<!-- renderer: ([^>]*) -->/, (_comment, names: string) =>
    names
      .split(/\s+/)
      .filter((name) => /^\/app-[A-Z0-9]+\.js$/.test(name))
      .map((name) => `<link rel="modulepreload" href="${name}" />`)
      .join("\n    "),
  );
  if (!TREE_PAGE.test(pathname)) return page;
  return page.replace(/<!-- cards-worker: (\/app-[A-Z0-9]+\.js) -->/, (_comment, name: string) => `<link rel="prefetch" href="${name}" />`);
}

function directoryClient(webDir: string, remoteImages: RemoteImagePolicy): Router {
  const router = Router();
  const index = path.join(webDir, "index.html");
  // Read each time, as a rebuilt client is served without a restart.
  const sendIndex: express.RequestHandler = (req, res, next) => {
    readFile(index, "utf8").then(
      (html) => res.set("Cache-Control", "no-cache").type("html").send(pageFor(withPolicy(html, remoteImages), req.path)),
      next,
    );
  };
  router.get(["/", "/trees/:treeId", "/p/:publicUrl", "/settings", "/settings/keys"], sendIndex);
  router.get(HASHED, precompressed(webDir));
  router.use(
    express.static(webDir, {
      index: false,
      fallthrough: true,
      cacheControl: false,
      setHeaders: (res, filePath) => res.set("Cache-Control", cacheControl(`/${path.basename(filePath)}`)),
    }),
  );
  return router;
}

/**
 * The hashed script and style sheet as the build compressed them (`app-<hash>.js.br`, `.gz`:
 * scripts/build-web.mjs), when the request accepts that encoding; otherwise, or where the
 * copy is missing, express.static sends the plain file (and the compression middleware may
 * compress it).
 */
function precompressed(webDir: string): express.RequestHandler {
  return (req, res, next) => {
    if (HASHED.test(req.path) && !req.path.endsWith(".map")) {
      const encoding = chooseEncoding(req.get("accept-encoding"));
      if (encoding) {
        const file = path.join(webDir, `${path.basename(req.path)}.${encoding === "br" ? "br" : "gz"}`);
        res.set({ "Content-Encoding": encoding, "Cache-Control": cacheControl(req.path) });
        res.vary("Accept-Encoding");
        res.type(path.extname(req.path));
        res.sendFile(file, { cacheControl: false }, (err) => {
          if (!err) return;
          // No such copy (a build without them): the plain file, as usual.
          if (!res.headersSent) {
            res.removeHeader("Content-Encoding");
            return next();
          }
          next(err);
        });
        return;
      }
    }
    next();
  };
}

/** The binary's copy, read once: a few hundred kilobytes, held as the buffers sent. */
function embeddedClient(remoteImages: RemoteImagePolicy): Router {
  const names = JSON.parse(sea.getAsset(WEB_ASSET_LIST, "utf8")) as string[];
  const files = new Map(names.map((name) => [`/${name}`, Buffer.from(sea.getAsset(`web/${name}`))]));
  const stored = files.get("/index.html");
  if (!stored) throw new Error("The binary holds no browser client (web/index.html).");
  const index = withPolicy(stored.toString("utf8"), remoteImages);
  const router = Router();
  router.get(["/", "/trees/:treeId", "/p/:publicUrl", "/settings", "/settings/keys"], (req, res) => {
    res.set("Cache-Control", "no-cache").type("html").send(pageFor(index, req.path));
  });
  router.get("/{*file}", (req, res, next) => {
    const body = files.get(req.path);
    if (!body) return next();
    res.set("Cache-Control", cacheControl(req.path)).type(path.extname(req.path)).send(body);
  });
  return router;
}
