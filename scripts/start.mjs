/**
 * `npm start`: runs the compiled server (dist/server.mjs) in this process, building it and
 * the browser client first when either is missing or older than any file or folder under
 * src/ or scripts/, so a fresh clone needs only `npm install && npm start` and an edited
 * checkout never runs stale code. The check is a stat of ~200 paths (a few milliseconds);
 * esbuild is loaded only when a build is needed. Compiled, the server starts without tsx's
 * ~2 s and ~85 MB (docs/performance.md); `npm run dev` still runs the sources with tsx.
 */
import { readdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const OUTPUTS = [join(root, "dist", "server.mjs"), join(root, "dist", "web", "index.html")];
const SOURCES = ["src", "scripts"];

function modified(file) {
  return statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? -Infinity;
}

/** A missing output, or a source (a folder too: a file removed or added) newer than the oldest output. */
function isStale() {
  const built = Math.min(...OUTPUTS.map(modified));
  if (built === -Infinity) return true;
  for (const dir of SOURCES) {
    const base = join(root, dir);
    if (modified(base) > built) return true;
    for (const name of readdirSync(base, { recursive: true })) {
      if (modified(join(base, name)) > built) return true;
    }
  }
  return false;
}

function log(message, fields = {}) {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: "info", message, ...fields })}\n`);
}

if (isStale()) {
  const started = Date.now();
  const { build } = await import("./build.mjs");
  const { files } = await build();
  log("built", { files: files.length, ms: Date.now() - started });
}
// Stack traces name src/ files and lines (the bundle's maps), for modules loaded from here on.
process.setSourceMapsEnabled(true);
await import("../dist/server.mjs");
