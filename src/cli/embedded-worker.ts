/**
 * How a worker thread starts from the single binary. Node 20 starts a Worker only from a
 * file or from source text, and the binary has no files: `npm run package` bundles
 * src/cli/worker-main.ts (with every worker entry it registers) into the asset `worker.cjs`,
 * and `startEmbeddedWorker` starts that text with the worker's role in `workerData`. The
 * binary's entry (cardtree.ts) installs it as the process's way of starting workers
 * (src/formats/worker-start.ts), which the export pool asks.
 */
import sea from "node:sea";
import { Worker, type WorkerOptions } from "node:worker_threads";

/** The `workerData` key naming the worker entry to run (src/cli/worker-main.ts). */
export const WORKER_ROLE_KEY = "cardtreeWorker";
/** The asset holding the bundled worker script. */
export const WORKER_ASSET = "worker.cjs";

/** Starts the worker `role` from the binary's embedded worker script (`file` is not there to start). */
export function startEmbeddedWorker(role: string, _file: URL, options: WorkerOptions): Worker {
  return new Worker(sea.getAsset(WORKER_ASSET, "utf8"), {
    ...options,
    eval: true,
    workerData: { ...(options.workerData as object), [WORKER_ROLE_KEY]: role },
  });
}
