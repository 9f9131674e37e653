/**
 * The single binary's worker script (the asset `worker.cjs`, see src/cli/embedded-worker.ts):
 * runs the worker entry that `workerData` names. Each entry is a module that does its work
 * when imported (it listens on `parentPort`); registering it here is what puts it in the
 * binary. Only worker threads run this file.
 */
import { workerData } from "node:worker_threads";
import { WORKER_ROLE_KEY } from "./embedded-worker.js";

const WORKER_ENTRIES: Record<string, () => Promise<unknown>> = {
  // A worker module registers as: role: () => import("../path/to/worker.js"),
};

const role = (workerData as Record<string, string> | null)?.[WORKER_ROLE_KEY] ?? "";
const entry = WORKER_ENTRIES[role];
if (!entry) throw new Error(`This binary has no worker "${role}".`);
// No top-level await: the bundle is CommonJS.
void entry();
