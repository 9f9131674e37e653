/**
 * Builds the browser client (src/web) into dist/web: app.js, app.css and index.html.
 * `npm run build` runs this file; the server imports `buildWeb()` to build on start when the
 * bundle is missing. Everything is bundled here, so the page loads nothing from elsewhere.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Bundles the client. Files are written to a temporary name and renamed, so a server that is
 * serving dist/web while a build runs (tests build in parallel workers) never sends half a file.
 * @param {{ outDir?: string, minify?: boolean }} [options]
 * @returns {Promise<{ outDir: string, files: string[] }>}
 */
export async function buildWeb(options = {}) {
  const outDir = options.outDir ?? join(root, "dist", "web");
  const minify = options.minify ?? true;
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [
      { in: "src/web/main.ts", out: "app" },
      { in: "src/web/styles/app.css", out: "app" },
    ],
    outdir: outDir,
    bundle: true,
    format: "iife",
    platform: "browser",
    target: ["es2022", "chrome110", "firefox110", "safari16"],
    minify,
    sourcemap: "linked",
    legalComments: "linked",
    write: false,
    logLevel: "silent",
  });

  await mkdir(outDir, { recursive: true });
  const written = [];
  const hashes = {};
  for (const file of result.outputFiles) {
    await writeAtomically(file.path, file.contents);
    written.push(file.path);
    hashes[file.path.slice(outDir.length + 1)] = createHash("sha256").update(file.contents).digest("hex").slice(0, 10);
  }

  // The query string changes with the bundle's content, so a browser never runs a cached old app.
  const template = await readFile(join(root, "src", "web", "index.html"), "utf8");
  const html = template
    .replace("/app.js", `/app.js?v=${hashes["app.js"]}`)
    .replace("/app.css", `/app.css?v=${hashes["app.css"]}`);
  const indexPath = join(outDir, "index.html");
  await writeAtomically(indexPath, html);
  written.push(indexPath);
  return { outDir, files: written };
}

async function writeAtomically(path, contents) {
  const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(temporary, contents);
  await rename(temporary, path);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = Date.now();
  const { outDir, files } = await buildWeb();
  console.log(`Built ${files.length} files into ${outDir} in ${Date.now() - started} ms`);
}
