/**
 * Serves the bundled browser client: its files, and index.html for the client's own pages
 * (`/`, `/trees/:treeId`, `/p/:publicUrl`, `/settings`), which it routes itself. From a checkout the
 * files are dist/web's; in the single binary (`npm run package`) they are the binary's own
 * SEA assets, listed in `web/files.json` (scripts/package.mjs), and nothing is read from disk.
 *
 * Caching (SPEC §13: never a stale app after a deploy): the script and style sheet have
 * content-hashed names and are kept a year (`immutable`); index.html, the service worker
 * (`sw.js`, fixed name), the manifest and icons are revalidated on every use.
 */
import path from "node:path";
import sea from "node:sea";
import express, { Router } from "express";

/** The asset holding the names of the client's files, each stored as `web/<name>`. */
export const WEB_ASSET_LIST = "web/files.json";

/** `app-<hash>.js`, `app-<hash>.css` and their maps: a name never holds two contents. */
const HASHED = /^\/app-[A-Z0-9]{8,}\.(js|css)(\.map)?$/;

function cacheControl(urlPath: string): string {
  return HASHED.test(urlPath) ? "public, max-age=31536000, immutable" : "no-cache";
}

export function webClient(webDir: string): Router {
  return sea.isSea() ? embeddedClient() : directoryClient(webDir);
}

function directoryClient(webDir: string): Router {
  const router = Router();
  const index = path.join(webDir, "index.html");
  const sendIndex: express.RequestHandler = (_req, res, next) => {
    res.set("Cache-Control", "no-cache");
    res.sendFile(index, (err) => err && next(err));
  };
  router.get(["/", "/trees/:treeId", "/p/:publicUrl", "/settings"], sendIndex);
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

/** The binary's copy, read once: a few hundred kilobytes, held as the buffers sent. */
function embeddedClient(): Router {
  const names = JSON.parse(sea.getAsset(WEB_ASSET_LIST, "utf8")) as string[];
  const files = new Map(names.map((name) => [`/${name}`, Buffer.from(sea.getAsset(`web/${name}`))]));
  const index = files.get("/index.html");
  if (!index) throw new Error("The binary holds no browser client (web/index.html).");
  const router = Router();
  router.get(["/", "/trees/:treeId", "/p/:publicUrl", "/settings"], (_req, res) => {
    res.set("Cache-Control", "no-cache").type("html").send(index);
  });
  router.get("/{*file}", (req, res, next) => {
    const body = files.get(req.path);
    if (!body) return next();
    res.set("Cache-Control", cacheControl(req.path)).type(path.extname(req.path)).send(body);
  });
  return router;
}
