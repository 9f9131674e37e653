/**
 * Builds the browser client (src/web) into dist/web: the app's script and style sheet under
 * content-hashed names (`app-<hash>.js`, `app-<hash>.css`: a new build is a new name, so no
 * cache anywhere can hand out an old one after a deploy), index.html naming them, the service
 * worker `sw.js` (src/web/sw.ts, its fixed name carrying the build's asset list and version),
 * the web app manifest and the icons (scripts/icons.mjs). `npm run build` runs this file;
 * the server imports `buildWeb()` to build on start when the bundle is missing. Everything is
 * bundled here, so the page loads nothing from elsewhere.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import zlib from "node:zlib";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";
import { iconPng, iconSvg, manifest } from "./icons.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/** Which hashed files the last two builds wrote (a tab of the previous build may still load its chunk). */
const BUILD_LIST = "web-build.json";

/**
 * Bundles the client. Files are written to a temporary name and renamed, so a server that is
 * serving dist/web while a build runs (tests build in parallel workers) never sends half a file.
 * @param {{ outDir?: string, minify?: boolean }} [options]
 * @returns {Promise<{ outDir: string, files: string[] }>}
 */
export async function buildWeb(options = {}) {
  const outDir = options.outDir ?? join(root, "dist", "web");
  const minify = options.minify ?? true;
  // The worker that fetches and parses a tree's cards off the page's thread
  // (src/web/workers/cards-worker.ts): a classic script under a hashed name, which the app's
  // bundle is told.
  const cardsWorker = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [{ in: "src/web/workers/cards-worker.ts", out: "app" }],
    outdir: outDir,
    entryNames: "[name]-[hash]",
    bundle: true,
    format: "iife",
    platform: "browser",
    target: ["es2022", "chrome110", "firefox110", "safari16"],
    minify,
    sourcemap: "linked",
    write: false,
    logLevel: "silent",
  });
  const workerFiles = cardsWorker.outputFiles;
  const workerName = workerFiles.map((file) => basename(file.path)).find((name) => name.endsWith(".js"));
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [
      { in: "src/web/main.ts", out: "app" },
      { in: "src/web/styles/app.css", out: "app" },
    ],
    outdir: outDir,
    entryNames: "[name]-[hash]",
    // What the first paint does not need (math, the history panel, dialogs, the settings
    // page...) is imported with `import()` where it is used and lands in chunks of its own,
    // `app-<hash>.js` like the entry, so they are served, cached and precompressed alike.
    chunkNames: "app-[hash]",
    splitting: true,
    bundle: true,
    format: "esm",
    platform: "browser",
    target: ["es2022", "chrome110", "firefox110", "safari16"],
    minify,
    sourcemap: "linked",
    legalComments: "linked",
    metafile: true,
    define: { __CARDTREE_CARDS_WORKER__: JSON.stringify(`/${workerName}`) },
    // The typefaces shipped with the app (src/web/styles/fonts.css), as files beside the style
    // sheet under content-hashed names (a new face is a new name; the same face keeps its name).
    loader: { ".woff2": "file", ".woff": "file" },
    assetNames: "[name]-[hash]",
    write: false,
    logLevel: "silent",
  });

  await mkdir(outDir, { recursive: true });
  const written = [];
  const names = [];
  for (const file of [...workerFiles, ...result.outputFiles]) {
    await writeAtomically(file.path, file.contents);
    written.push(file.path);
    names.push(basename(file.path));
  }
  const outputs = Object.entries(result.metafile.outputs).map(([path, output]) => ({ name: basename(path), ...output }));
  const script = outputs.find((output) => output.entryPoint === "src/web/main.ts" && output.name.endsWith(".js"))?.name;
  const style = names.find((name) => /^app-[A-Z0-9]+\.css$/.test(name));
  if (!script || !style) throw new Error(`The client build named no app script or style sheet: ${names.join(", ")}`);
  const scripts = names.filter((name) => /^app-[A-Z0-9]+\.js$/.test(name));
  // The chunks the entry imports statically are fetched beside it, not after it has been read.
  const preloads = outputs.find((output) => output.name === script).imports.filter((entry) => entry.kind === "import-statement").map((entry) => basename(entry.path));
  // The cards' renderer (src/web/markdown-render.ts, loaded with `import()`) and the chunks it
  // imports, named in a comment the server turns into preloads on the pages that draw cards
  // (src/http/web-client.ts): found only once the entry has run, they were two round trips
  // after it on a phone's network (issue 27, LCP).
  const renderer = chunkWithImports(outputs, "src/web/markdown-render.ts").filter((name) => name !== script && !preloads.includes(name));

  const statics = {
    "manifest.webmanifest": manifest(),
    "icon.svg": iconSvg(),
    "icon-192.png": iconPng(192),
    "icon-512.png": iconPng(512),
  };
  for (const [name, contents] of Object.entries(statics)) {
    const path = join(outDir, name);
    await writeAtomically(path, contents);
    written.push(path);
  }

  const template = await readFile(join(root, "src", "web", "index.html"), "utf8");
  const html = template
    .replace("/app.js", `/${script}`)
    .replace("/app.css", `/${style}`)
    .replace("    <!-- preloads -->\n", preloads.map((name) => `    <link rel="modulepreload" href="/${name}" />\n`).join(""))
    .replace("<!-- renderer -->", `<!-- renderer: ${renderer.map((name) => `/${name}`).join(" ")} -->`)
    // The cards' worker, which a tree page starts as soon as its script runs: named for the
    // server to prefetch on tree pages, so that its script is in the cache by then and the
    // cards are asked for beside the tree list, not a round trip after it (issue 27, LCP).
    .replace("<!-- cards-worker -->", `<!-- cards-worker: /${workerName} -->`);
  const indexPath = join(outDir, "index.html");
  await writeAtomically(indexPath, html);
  written.push(indexPath);

  // The service worker keeps exactly this build's shell; its bytes change with every build,
  // which is how browsers learn that a new version is out.
  // Every chunk is in the shell: a dialog opened offline loads its chunk from the cache.
  const shell = [`/${script}`, ...scripts.filter((name) => name !== script).map((name) => `/${name}`), `/${style}`, ...Object.keys(statics).map((name) => `/${name}`)];
  const version = createHash("sha256").update(html).update(shell.join("\n")).update(Object.values(statics).join("")).digest("hex").slice(0, 16);
  const worker = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [{ in: "src/web/sw.ts", out: "sw" }],
    outdir: outDir,
    bundle: true,
    format: "iife",
    platform: "browser",
    target: ["es2022", "chrome110", "firefox110", "safari16"],
    minify,
    define: { __CARDTREE_BUILD__: JSON.stringify({ version, shell }) },
    write: false,
    logLevel: "silent",
  });
  for (const file of worker.outputFiles) {
    await writeAtomically(file.path, file.contents);
    written.push(file.path);
  }
  await precompress(outDir, [...scripts, style]);
  await removeOlderBuilds(outDir, names);
  return { outDir, files: written };
}

/**
 * Brotli (quality 11) and gzip (level 9) copies beside the hashed scripts and style sheet,
 * made once per content (the name is the content's hash), so the server sends them as
 * they are (src/http/web-client.ts) instead of compressing per request.
 */
async function precompress(outDir, names) {
  for (const name of names) {
    const path = join(outDir, name);
    const plain = await readFile(path);
    const copies = {
      br: () => brotli(plain, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: plain.length } }),
      gz: () => gzip(plain, { level: 9 }),
    };
    for (const [suffix, make] of Object.entries(copies)) {
      const target = `${path}.${suffix}`;
      if (existsSync(target)) continue;
      await writeAtomically(target, await make());
    }
  }
}

/**
 * The output made for the dynamically imported `entryPoint` and every chunk it imports
 * statically, directly or not, by file name.
 * @param {{ name: string, entryPoint?: string, imports: { path: string, kind: string }[] }[]} outputs
 * @param {string} entryPoint
 * @returns {string[]}
 */
function chunkWithImports(outputs, entryPoint) {
  const start = outputs.find((output) => output.entryPoint === entryPoint && output.name.endsWith(".js"));
  if (!start) throw new Error(`The client build made no chunk for ${entryPoint}`);
  const names = [start.name];
  for (let i = 0; i < names.length; i++) {
    const output = outputs.find((candidate) => candidate.name === names[i]);
    for (const entry of output?.imports ?? []) {
      const name = basename(entry.path);
      if (entry.kind === "import-statement" && !names.includes(name)) names.push(name);
    }
  }
  return names;
}

/** Hashed files of builds before the previous one are removed. */
async function removeOlderBuilds(outDir, current) {
  let previous = [];
  try {
    previous = JSON.parse(await readFile(join(outDir, BUILD_LIST), "utf8")).current ?? [];
  } catch {
    // First build here: remove nothing we cannot name.
  }
  const keep = new Set([...current, ...previous]);
  for (const name of await readdir(outDir)) {
    const built = /^(app(-[A-Z0-9]+)?\.(js|css))(\.map|\.LEGAL\.txt|\.br|\.gz)?$/.exec(name);
    if (built && !keep.has(name) && !(/\.(br|gz)$/.test(name) && keep.has(built[1]))) await rm(join(outDir, name), { force: true });
  }
  await writeAtomically(join(outDir, BUILD_LIST), `${JSON.stringify({ current, previous }, null, 1)}\n`);
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
