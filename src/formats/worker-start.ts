/**
 * How a worker thread of the export pool (export/worker-pool.ts) starts, in whatever this
 * process was built as. From a checkout a worker runs its module file: dist/'s compiled
 * chunk, or a .ts source under tsx (then through tsx's loader, registered inside the worker).
 * The single binary has no files; its entry point (src/cli/cardtree.ts) installs a starter
 * that runs the worker script embedded in it (src/cli/embedded-worker.ts). Formats may not
 * import the CLI, so the CLI hands its starter down here, once, before any export runs.
 */
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Worker, type WorkerOptions } from "node:worker_threads";

/** Starts the worker entry `role`, whose module is `file`. */
export type WorkerStarter = (role: string, file: URL, options: WorkerOptions) => Worker;

const require = createRequire(import.meta.url);

/** The process's way of starting workers: set by an entry point that cannot start them from files. */
let installed: WorkerStarter | null = null;

export function installWorkerStarter(starter: WorkerStarter): void {
  installed = starter;
}

/** Starts the worker `role` from `file` (its module, `new URL(import.meta.url)`), or as the entry point said. */
export function startWorker(role: string, file: URL, options: WorkerOptions): Worker {
  if (installed) return installed(role, file, options);
  return file.pathname.endsWith(".ts") ? new Worker(tsxBootstrap(file), { ...options, eval: true }) : new Worker(file, options);
}

/**
 * A worker script that registers tsx's loader and then imports `entry` (a .ts file). Node 20
 * workers do not apply loader hooks given as `--import` in `execArgv`, and a worker of vitest
 * has none to inherit; registering from inside the worker works in both.
 */
function tsxBootstrap(entry: URL): string {
  // require.resolve finds the CommonJS build of tsx's API; its ES module build sits beside it.
  const api = pathToFileURL(require.resolve("tsx/esm/api").replace(/\.cjs$/, ".mjs")).href;
  return `import(${JSON.stringify(api)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`;
}
