/**
 * The server's entry from a checkout: `npm start` runs it compiled (dist/server.mjs, built
 * by scripts/start.mjs when stale), as do the tests (built by their global set-up);
 * `npm run dev` runs it with tsx, and then the browser client is built here when its bundle
 * is missing. The single binary has its
 * own entry (src/cli/cardtree.ts), which serves the client from inside itself.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { serve } from "./cli/serve-command.js";
import { WEB_DIR } from "./server.js";

if (!existsSync(path.join(WEB_DIR, "index.html"))) {
  // A computed specifier, so esbuild leaves the builder (and esbuild) out of dist/server.mjs;
  // from dist/ as from src/, ../scripts is the repository's. Its type is the builder's own
  // declaration (scripts/build-web.d.mts), so a change there is a compile error here.
  const builder = new URL("../scripts/build-web.mjs", import.meta.url).href;
  const { buildWeb }: typeof import("../scripts/build-web.mjs") = await import(builder);
  await buildWeb();
}
await serve();
