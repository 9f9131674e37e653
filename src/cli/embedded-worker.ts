/**
 * How a worker thread starts from the single binary. Node 20 starts a Worker only from a
 * file or from source text, and the binary has no files: `npm run package` bundles
 * src/cli/worker-main.ts (with every worker entry it registers) into the asset `worker.cjs`,
 * and `startWorker` starts that text with the worker's role in `workerData`. From a checkout
 * (tsx, dist/server.mjs) the worker starts from its own module file as usual.
 */
import sea from "node:sea";
import { Worker, type WorkerOptions } from "node:worker_threads";

/** The `workerData` key naming the worker entry to run (src/cli/worker-main.ts). */
export const WORKER_ROLE_KEY = "cardtreeWorker";
/** The asset holding the bundled worker script. */
export const WORKER_ASSET = "worker.cjs";

/**
 * Starts the worker `role`: from the binary's embedded worker script when running as the
 * single binary, else from `file` (the worker module beside its caller,
 * `new URL("./worker.js", import.meta.url)`).
 */
export function startWorker(role: string, file: URL, options: WorkerOptions = {}): Worker {
  if (!sea.isSea()) return new Worker(file, options);
  return new Worker(sea.getAsset(WORKER_ASSET, "utf8"), {
    ...options,
    eval: true,
    workerData: { ...(options.workerData as object), [WORKER_ROLE_KEY]: role },
  });
}
