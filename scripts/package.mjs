/**
 * `npm run package`: builds dist/cardtree, one executable file holding the server, the
 * browser client and the CLI (SPEC §12), as a Node single executable application:
 *
 * 1. esbuild bundles src/cli/cardtree.ts and every package it loads into one CommonJS
 *    script (Node 20 runs only CommonJS as an executable's main script, and that script can
 *    `require` only Node's built-ins). Parts the server imports on first use (GraphQL, the
 *    exporters, GraphiQL's page) are in it too, evaluated only when first used.
 * 2. The browser client is bundled (scripts/build-web.mjs) and its files become the
 *    executable's assets (`web/<name>`, listed in `web/files.json`), which
 *    src/http/web-client.ts serves with `node:sea`'s getAsset. So is
 *    the worker-thread script (`worker.cjs`, src/cli/embedded-worker.ts), and GraphiQL's
 *    page (see `graphiqlAssets`).
 * 3. `node --experimental-sea-config` writes the blob, and postject injects it into a copy of
 *    the node binary running this script (Linux x64 here).
 */
import { execFile } from "node:child_process";
import { chmod, copyFile, mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { isBuiltin } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import * as esbuild from "esbuild";
import { buildWeb } from "./build-web.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const BINARY = join(root, "dist", "cardtree");
const WORK = join(root, "dist", "package");
/** The fuse Node's single executables look for (Node's documentation, "Single executable applications"). */
const SEA_FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

/**
 * In the ESM sources `import.meta.url` names the module's file; a CommonJS bundle has no
 * import.meta, so it becomes the bundle's own file URL (in the binary: the executable's).
 */
const IMPORT_META_URL = "__cardtreeImportMetaUrl";

/**
 * Two store modules reach NeDB's internals through `createRequire(import.meta.url)`, a
 * require esbuild cannot follow (and the binary's require would not find the files). Without
 * the local `require` those calls are the bundle's own require, which esbuild resolves and
 * bundles. A module with a createRequire line of another shape fails the build loudly.
 */
const bundleCreateRequire = {
  name: "bundle-create-require",
  setup(build) {
    build.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      if (!source.includes("createRequire(")) return undefined;
      const line = /^const require = createRequire\(import\.meta\.url\);$/m;
      if (!line.test(source)) {
        return { errors: [{ text: `${args.path}: a createRequire the package build does not know how to bundle` }] };
      }
      return { contents: source.replace(line, ""), loader: "ts" };
    });
  },
};

/**
 * A package's `import("node:fs")` (pptxgenjs has some) would stay a dynamic import in the
 * bundle, which a single executable cannot run (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING).
 * Each becomes an import of a small bundled module that requires the built-in.
 */
const builtinDynamicImports = {
  name: "builtin-dynamic-imports",
  setup(build) {
    build.onResolve({ filter: /^[a-z:_/]+$/ }, (args) =>
      args.kind === "dynamic-import" && isBuiltin(args.path) ? { path: args.path, namespace: "builtin" } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "builtin" }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: "js",
    }));
  },
};

/**
 * GraphiQL's page is 8.6 MiB of JavaScript and CSS held as string constants
 * (@graphql-yoga/render-graphiql/graphiql), three quarters of the bundled script: in the
 * script they would be compiled and held in memory by every start. They go in as assets
 * instead (`graphiql/<name>`), and the module the server imports on the first GraphiQL visit
 * reads them from there.
 */
const GRAPHIQL_MODULE = "@graphql-yoga/render-graphiql/graphiql";

async function graphiqlAssets() {
  const bundle = await import(GRAPHIQL_MODULE);
  const dir = join(WORK, "graphiql");
  await mkdir(dir, { recursive: true });
  const assets = {};
  for (const [name, value] of Object.entries(bundle)) {
    if (typeof value !== "string") throw new Error(`${GRAPHIQL_MODULE} exports ${name} as ${typeof value}, not text: update scripts/package.mjs`);
    await writeFile(join(dir, name), value);
    assets[`graphiql/${name}`] = join(dir, name);
  }
  return assets;
}

const graphiqlFromAssets = (names) => ({
  name: "graphiql-from-assets",
  setup(build) {
    build.onResolve({ filter: /^@graphql-yoga\/render-graphiql\/graphiql$/ }, (args) => ({ path: args.path, namespace: "graphiql-assets" }));
    build.onLoad({ filter: /.*/, namespace: "graphiql-assets" }, () => ({
      contents: `const { getAsset } = require("node:sea");
for (const name of ${JSON.stringify(names)}) exports[name] = getAsset("graphiql/" + name, "utf8");`,
      loader: "js",
    }));
  },
});

/** The binary's main script and its worker-thread script (src/cli/embedded-worker.ts). */
async function bundleScripts(graphiqlNames) {
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: [
      { in: "src/cli/cardtree.ts", out: "cardtree" },
      { in: "src/cli/worker-main.ts", out: "worker" },
    ],
    outdir: WORK,
    outExtension: { ".js": ".cjs" },
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    minify: true,
    // Names stay readable in stack traces.
    keepNames: true,
    legalComments: "none",
    define: { "import.meta.url": IMPORT_META_URL },
    banner: { js: `var ${IMPORT_META_URL} = require("node:url").pathToFileURL(__filename).href;` },
    plugins: [bundleCreateRequire, builtinDynamicImports, graphiqlFromAssets(graphiqlNames)],
    logLevel: "warning",
  });
  return { main: join(WORK, "cardtree.cjs"), worker: join(WORK, "worker.cjs") };
}

/** The client's files, without source maps (the binary has no sources to map to). */
async function bundleClient() {
  const outDir = join(WORK, "web");
  await rm(outDir, { recursive: true, force: true });
  await buildWeb({ outDir });
  const names = (await readdir(outDir)).filter((name) => !name.endsWith(".map") && !name.endsWith(".tmp")).sort();
  return { outDir, names };
}

async function run(command, args) {
  try {
    await promisify(execFile)(command, args, { cwd: root, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    throw new Error(`${[command, ...args].join(" ")} failed:\n${err.stdout ?? ""}${err.stderr ?? ""}`, { cause: err });
  }
}

export async function packageBinary() {
  await rm(WORK, { recursive: true, force: true });
  await mkdir(WORK, { recursive: true });
  const graphiql = await graphiqlAssets();
  const graphiqlNames = Object.keys(graphiql).map((key) => key.slice("graphiql/".length));
  let scripts;
  let client;
  try {
    [scripts, client] = await Promise.all([bundleScripts(graphiqlNames), bundleClient()]);
  } finally {
    await esbuild.stop();
  }
  const list = join(WORK, "web-files.json");
  await writeFile(list, JSON.stringify(client.names));
  const assets = { "web/files.json": list, "worker.cjs": scripts.worker, ...graphiql };
  for (const name of client.names) assets[`web/${name}`] = join(client.outDir, name);

  const blob = join(WORK, "cardtree.blob");
  const config = join(WORK, "sea-config.json");
  await writeFile(
    config,
    JSON.stringify({ main: scripts.main, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true, assets }, null, 1),
  );
  await run(process.execPath, ["--experimental-sea-config", config]);

  await rm(BINARY, { force: true });
  await copyFile(process.execPath, BINARY);
  await chmod(BINARY, 0o755);
  // postject's own command, in a child process: its ELF library prints warnings about
  // sections it leaves alone, shown here only if the injection fails.
  const postject = join(root, "node_modules", "postject", "dist", "cli.js");
  await run(process.execPath, [postject, BINARY, "NODE_SEA_BLOB", blob, "--sentinel-fuse", SEA_FUSE]);
  return { binary: BINARY, bytes: (await stat(BINARY)).size, scriptBytes: (await stat(scripts.main)).size };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = Date.now();
  const { binary, bytes, scriptBytes } = await packageBinary();
  const mb = (n) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  console.log(`Built ${binary} (${mb(bytes)}; the bundled script ${mb(scriptBytes)}) in ${Date.now() - started} ms`);
}
