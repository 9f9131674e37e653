/**
 * The single binary's worker script (the asset `worker.cjs`, see src/cli/embedded-worker.ts):
 * runs the worker entry that `workerData` names. Each entry is a module that does its work
 * when imported (it listens on `parentPort`); registering it here is what puts it in the
 * binary. Only worker threads run this file.
 */
import { workerData } from "node:worker_threads";
import { EXPORT_WORKER_ROLE } from "../formats/export/worker-pool.js";
import { WORKER_ROLE_KEY } from "./embedded-worker.js";

const WORKER_ENTRIES: Record<string, () => Promise<unknown>> = {
  // Exports and the parsing of big imports (src/formats/export/worker-pool.ts).
  [EXPORT_WORKER_ROLE]: () => import("../formats/export/worker-pool.js"),
};

const role = (workerData as Record<string, string> | null)?.[WORKER_ROLE_KEY] ?? "";
const entry = WORKER_ENTRIES[role];
if (!entry) throw new Error(`This binary has no worker "${role}".`);
// No top-level await: the bundle is CommonJS.
void entry();
