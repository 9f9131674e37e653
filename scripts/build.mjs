/**
 * `npm run build`: compiles the server (src/main.ts) into dist/server.mjs, the CLI
 * (src/cli/main.ts) into dist/cli.mjs, and bundles the browser client into dist/web
 * (scripts/build-web.mjs). `npm start` (scripts/start.mjs) imports this file to build when
 * dist/ is missing or older than the sources.
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
/** `npm run cli` compiled: the tests run it (test/helpers/cli.ts), as they run dist/server.mjs. */
export const CLI_ENTRY = join(DIST, "cli.mjs");

/**
 * Compiles src/main.ts into dist/server.mjs plus its chunks (dist/server-*.mjs). The chunks
 * are written before the entry and each file under a temporary name then renamed, so a
 * server starting meanwhile never loads half a build. A running server may still lazily load
 * a chunk of the build it started from: the previous build's files are kept, older ones removed.
 * @returns {Promise<{ files: string[] }>}
 */
export async function buildServer() {
  return buildEntry("src/main.ts", "server");
}

/**
 * Compiles src/cli/main.ts into dist/cli.mjs plus its chunks (dist/cli-*.mjs), the same way
 * and separately from the server, so the server's chunks do not change with the CLI. Its
 * chunks matter as the server's do: the export worker runs its own chunk's file.
 * @returns {Promise<{ files: string[] }>}
 */
export async function buildCli() {
  return buildEntry("src/cli/main.ts", "cli");
}

/** One entry point `name`.mjs with chunks `name`-*.mjs, and `name`-files.json naming the last two builds' files. */
async function buildEntry(source, name) {
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [{ in: source, out: name }],
    outdir: DIST,
    outExtension: { ".js": ".mjs" },
    chunkNames: `${name}-[name]-[hash]`,
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
  const outputs = [...result.outputFiles].sort((a, b) => rank(a.path, name) - rank(b.path, name));
  for (const file of outputs) await writeAtomically(file.path, file.contents);
  const files = outputs.map((file) => basename(file.path));
  await removeOlderBuilds(files, name);
  return { files: outputs.map((file) => file.path) };
}

/** Chunks first, then the entry's map, then the entry itself. */
function rank(path, name) {
  const file = basename(path);
  return file === `${name}.mjs` ? 2 : file === `${name}.mjs.map` ? 1 : 0;
}

async function removeOlderBuilds(current, name) {
  const manifest = join(DIST, `${name}-files.json`);
  let previous = [];
  try {
    previous = JSON.parse(await readFile(manifest, "utf8")).current ?? [];
  } catch {
    // First build, or an unreadable manifest: remove nothing we cannot name.
  }
  const keep = new Set([...current, ...previous, `${name}-files.json`]);
  const chunk = new RegExp(`^${name}-.*\\.mjs(\\.map)?$`);
  for (const file of await readdir(DIST)) {
    if (chunk.test(file) && !keep.has(file)) await rm(join(DIST, file), { force: true });
  }
  await writeAtomically(manifest, `${JSON.stringify({ current, previous }, null, 1)}\n`);
}

async function writeAtomically(path, contents) {
  const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(temporary, contents);
  await rename(temporary, path);
}

/** Every bundle. esbuild's service process is stopped afterwards, so it does not linger beside a server. */
export async function build() {
  try {
    const [server, cli, web] = await Promise.all([buildServer(), buildCli(), buildWeb()]);
    return { files: [...server.files, ...cli.files, ...web.files] };
  } finally {
    await esbuild.stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = Date.now();
  const { files } = await build();
  console.log(`Built ${files.length} files into ${DIST} in ${Date.now() - started} ms`);
}
