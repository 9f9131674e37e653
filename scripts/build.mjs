/**
 * `npm run build`: compiles the server (src/main.ts) into dist/server.mjs and bundles the
 * browser client into dist/web (scripts/build-web.mjs). `npm start` (scripts/start.mjs)
 * imports this file to build when dist/ is missing or older than the sources.
 *
 * The server bundle is esbuild's compilation of our TypeScript only: dependencies stay in
 * node_modules (`packages: "external"`). Code the server loads on first use (GraphQL, the
 * export formats) goes into chunks of its own (`splitting`), so that its packages are not
 * imported at start. Every output sits directly in dist/, like src/'s files in src/, so a
 * path a module computes from import.meta.url (`../dist/web`, `../scripts/...`) means the
 * same thing compiled. Source maps point stack traces at src/ (scripts/start.mjs enables them).
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";
import { buildWeb } from "./build-web.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const DIST = join(root, "dist");
export const SERVER_ENTRY = join(DIST, "server.mjs");
/** Which files the last two server builds wrote, so older chunks can be removed. */
const MANIFEST = join(DIST, "server-files.json");

/**
 * Compiles src/main.ts into dist/server.mjs plus its chunks (dist/server-*.mjs). The chunks
 * are written before the entry and each file under a temporary name then renamed, so a
 * server starting meanwhile never loads half a build. A running server may still lazily load
 * a chunk of the build it started from: the previous build's files are kept, older ones removed.
 * @returns {Promise<{ files: string[] }>}
 */
export async function buildServer() {
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [{ in: "src/main.ts", out: "server" }],
    outdir: DIST,
    outExtension: { ".js": ".mjs" },
    chunkNames: "server-[name]-[hash]",
    bundle: true,
    splitting: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    sourcemap: "linked",
    // The maps only need to point at src/, which is beside them.
    sourcesContent: false,
    write: false,
    logLevel: "silent",
  });
  await mkdir(DIST, { recursive: true });
  const outputs = [...result.outputFiles].sort((a, b) => rank(a.path) - rank(b.path));
  for (const file of outputs) await writeAtomically(file.path, file.contents);
  const files = outputs.map((file) => basename(file.path));
  await removeOlderBuilds(files);
  return { files: outputs.map((file) => file.path) };
}

/** Chunks first, then the entry's map, then the entry itself. */
function rank(path) {
  const name = basename(path);
  return name === "server.mjs" ? 2 : name === "server.mjs.map" ? 1 : 0;
}

async function removeOlderBuilds(current) {
  let previous = [];
  try {
    previous = JSON.parse(await readFile(MANIFEST, "utf8")).current ?? [];
  } catch {
    // First build, or an unreadable manifest: remove nothing we cannot name.
  }
  const keep = new Set([...current, ...previous, "server-files.json"]);
  for (const name of await readdir(DIST)) {
    if (/^server-.*\.mjs(\.map)?$/.test(name) && !keep.has(name)) await rm(join(DIST, name), { force: true });
  }
  await writeAtomically(MANIFEST, `${JSON.stringify({ current, previous }, null, 1)}\n`);
}

async function writeAtomically(path, contents) {
  const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(temporary, contents);
  await rename(temporary, path);
}

/** Both bundles. esbuild's service process is stopped afterwards, so it does not linger beside a server. */
export async function build() {
  try {
    const [server, web] = await Promise.all([buildServer(), buildWeb()]);
    return { files: [...server.files, ...web.files] };
  } finally {
    await esbuild.stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = Date.now();
  const { files } = await build();
  console.log(`Built ${files.length} files into ${DIST} in ${Date.now() - started} ms`);
}
