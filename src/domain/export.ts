/**
 * Export (SPEC §6): the command that checks access and gathers the live cards; the
 * formats themselves live in src/formats/export/.
 */
import { exportFormats, exportQuerySchema, type ExportFormat, type ExportResult } from "../shared/export-options.js";
import type { Ports } from "./context.js";
import { ValidationError } from "../shared/errors.js";
import type { Actor } from "./policy.js";
import { parseInput } from "../shared/schemas.js";
import { loadTree } from "./trees.js";

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
  ctx: Ports<"store" | "exporter">,
  actor: Actor | null,
  treeId: string,
  format: string,
  query: Record<string, unknown>,
): Promise<ExportResult> {
  const checkedFormat = parseExportFormat(format);
  const options = parseInput(exportQuerySchema, query);
  const tree = await loadTree(ctx, actor, treeId, "export");
  const cards = await ctx.store.cards.liveByTree(tree._id);
  return ctx.exporter.exportTree({ format: checkedFormat, tree, cards, options, anonymous: actor === null });
}
