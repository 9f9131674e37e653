/**
 * Export (SPEC §6): the command that checks access and gathers the live cards; the
 * formats themselves live in src/formats/export/.
 */
import type { ExportResult } from "../formats/export/index.js";
import { exportFormats, exportQuerySchema, type ExportFormat } from "../formats/export/options.js";
import type { DomainContext } from "./context.js";
import { ValidationError } from "./errors.js";
import type { Actor } from "./policy.js";
import { parseInput } from "./schemas.js";
import { loadTree } from "./trees.js";

/**
 * The exporters, loaded on the first export: with docx, pptxgenjs, marked and
 * sanitize-html they are about half of the server's module loading, ~1 s of every start
 * under tsx, which most runs of the server never need.
 */
export const loadExporters = () => import("../formats/export/index.js");

/** The worker hand-off, loaded on the first export too; only ever imported dynamically (see the module). */
const loadExportPool = () => import("../formats/export/worker-pool.js");

export function parseExportFormat(format: string): ExportFormat {
  if (!(exportFormats as readonly string[]).includes(format)) {
    throw new ValidationError(`Unknown export format "${format}"; use one of ${exportFormats.join(", ")}.`, [
      { path: "format", message: `must be one of ${exportFormats.join(", ")}` },
    ]);
  }
  return format as ExportFormat;
}

/**
 * Exports a tree the actor may export (anyone, for a public tree).
 * @throws ValidationError (format, flags), NotFoundError (tree or cardId), policy errors.
 */
export async function exportTreeAs(
  ctx: DomainContext,
  actor: Actor | null,
  treeId: string,
  format: string,
  query: Record<string, unknown>,
): Promise<ExportResult> {
  const checkedFormat = parseExportFormat(format);
  const options = parseInput(exportQuerySchema, query);
  const tree = await loadTree(ctx, actor, treeId, "export");
  const cards = await ctx.store.cards.liveByTree(tree._id);
  const { exportOffThread } = await loadExportPool();
  return exportOffThread(ctx.config.exports, { format: checkedFormat, tree, cards, options });
}
