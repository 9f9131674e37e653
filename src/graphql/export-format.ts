/**
 * `Tree.export`: the text export formats (SPEC §5, §6) with the same flags as the REST
 * download, checked with the same schema. The binary formats (docx, impress) stay REST
 * downloads: a GraphQL string is no place for them.
 */
import { exportTreeAs } from "../domain/export.js";
import { exportQuerySchema } from "../shared/export-options.js";
import { builder } from "./builder.js";
import { TreeType } from "./tree.js";

export const ExportFormatEnum = builder.enumType("ExportFormat", {
  values: {
    TXT: { value: "txt", description: "Card contents in tree order, separated by blank lines." },
    MD: { value: "md", description: "Like TXT; the cards are Markdown already." },
    HTML: { value: "html", description: "One standalone, sanitized HTML page." },
    JSON: { value: "json", description: "Nested `[{content, children}]`, the shape imports read." },
    OPML: { value: "opml", description: "An OPML 2.0 outline: a card's first line as `text`, the rest as `_note`." },
    GKW: { value: "gkw", description: "A Gingko Writer file: Markdown in nested `<gingko-card id>` elements." },
  } as const,
});

export interface TreeExportShape {
  body: string;
  contentType: string;
  filename: string;
}

export const TreeExportType = builder.objectRef<TreeExportShape>("TreeExport").implement({
  description: "An export as the REST download serves it.",
  fields: (t) => ({
    body: t.exposeString("body"),
    contentType: t.exposeString("contentType"),
    filename: t.exposeString("filename", { description: "From the tree's name, as in Content-Disposition." }),
  }),
});

const flags = exportQuerySchema.shape;

builder.objectField(TreeType, "export", (t) =>
  t.field({
    type: TreeExportType,
    description: "The tree, or part of it, in a text format. Anyone may export a public tree.",
    args: {
      format: t.arg({ type: ExportFormatEnum, required: true }),
      cardId: t.arg.id({ validate: flags.cardId, description: "Only this card and its descendants." }),
      column: t.arg.int({ validate: flags.column, description: "Only the cards at this depth (1: first column), in tree order." }),
      newlines: t.arg.int({ validate: flags.newlines, description: "TXT and MD: newlines between cards (default 2)." }),
      start: t.arg.string({ validate: flags.start, description: "TXT and MD: written before each card." }),
      end: t.arg.string({ validate: flags.end, description: "TXT and MD: written after each card." }),
      leaves: t.arg.boolean({ validate: flags.leaves, description: "Only the cards without children, in tree order." }),
    },
    resolve: async (tree, { format, ...given }, context) => {
      // An explicit null means the same as leaving the flag out.
      const query = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== null && value !== undefined));
      const result = await exportTreeAs(context.domain, context.user, tree._id, format, query);
      const body = typeof result.body === "string" ? result.body : Buffer.from(result.body).toString("utf8");
      return { body, contentType: result.contentType, filename: result.filename };
    },
  }),
);
