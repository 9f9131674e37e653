/**
 * The formats as the domain's ports (src/domain/ports/formats.ts): seeds parsed and exports
 * rendered on the worker pool when they are big. The pool's module is loaded on first use
 * only: with the exporters it is about half of the server's module loading.
 */
import type { ExportJob, ExportResult } from "../shared/export-options.js";
import type { ImportNode } from "../shared/records.js";
import type { ExportPoolConfig } from "./export/worker-pool.js";

const loadPool = () => import("./export/worker-pool.js");

export function formatsOffThread(config: ExportPoolConfig): {
  parseSeed(seed: string): Promise<ImportNode[]>;
  exportTree(job: ExportJob): Promise<ExportResult>;
} {
  return {
    parseSeed: async (seed) => (await loadPool()).parseSeedOffThread(config, seed),
    exportTree: async (job) => (await loadPool()).exportOffThread(config, job),
  };
}
