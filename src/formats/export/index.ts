/**
 * The export layer's front door (SPEC §6): picks the cards, runs the format's exporter and
 * names the file. Pure: no HTTP and no store. The REST route and the GraphQL field call
 * `exportTree` with a tree's live cards; the route adds the header (src/http/content-disposition.ts).
 */
import { ValidationError } from "../../shared/errors.js";
import type { CardFields, Tree } from "../../shared/records.js";
import { docxExporter } from "./docx.js";
import { htmlExporter } from "./html.js";
import { impressExporter } from "./impress.js";
import { jsonExporter } from "./json.js";
import { gkwExporter } from "./gkw.js";
import { mdExporter } from "./md.js";
import { opmlExporter } from "./opml.js";
import { EXPORT_FILES, type ExportFormat, type ExportOptions, type ExportResult } from "../../shared/export-options.js";
import { selectCards, type ExportInput } from "./select.js";
import { txtExporter } from "./txt.js";
import { exportFilename } from "../../shared/file-names.js";

export { exportFilename };

export { exportFormats, exportQuerySchema, type ExportFormat, type ExportOptions, type ExportResult } from "../../shared/export-options.js";


const EXPORTERS: Record<ExportFormat, (input: ExportInput) => string | Promise<Buffer>> = {
  txt: txtExporter,
  md: mdExporter,
  html: htmlExporter,
  json: jsonExporter,
  docx: docxExporter,
  impress: impressExporter,
  opml: opmlExporter,
  gkw: gkwExporter,
};

/**
 * Exports `tree` in `format`. `cards` are the tree's live cards, in any order; `options`
 * are the flags as `exportQuerySchema` parsed them.
 * @throws NotFoundError when `options.cardId` is not one of `cards`.
 * @throws ValidationError for a format this layer does not know, a `column` below 1 (from
 *   callers that skipped the schema), or an impress export past its slide limit.
 */
export async function exportTree(
  format: ExportFormat,
  tree: Tree,
  cards: readonly CardFields[],
  options: ExportOptions,
): Promise<ExportResult> {
  if (!Object.hasOwn(EXPORTERS, format)) {
    throw new ValidationError(`Unknown export format "${format}".`, [{ path: "format", message: "is not an export format" }]);
  }
  const file = EXPORT_FILES[format];
  const selected = selectCards(cards, options);
  return {
    body: await EXPORTERS[format]({ tree, selected, options }),
    contentType: file.text ? `${file.mediaType}; charset=utf-8` : file.mediaType,
    filename: exportFilename(tree.name, file.extension),
  };
}

