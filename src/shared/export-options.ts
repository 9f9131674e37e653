/**
 * The export formats and flags of SPEC §6, written once: the REST route parses its query
 * string with `exportQuerySchema`, the GraphQL `export` field checks its arguments with it,
 * and the exporters take the inferred `ExportOptions`.
 */
import { z } from "zod";
import type { CardFields, Tree } from "./records.js";

export const exportFormats = ["txt", "md", "html", "json", "docx", "impress", "opml", "gkw"] as const;
export type ExportFormat = (typeof exportFormats)[number];

/**
 * What each format is as a file: its extension and media type. Text formats are sent in
 * UTF-8 (`; charset=utf-8`). The exporters and the OpenAPI document both read this table.
 */
export const EXPORT_FILES: Record<ExportFormat, { extension: string; mediaType: string; text: boolean }> = {
  txt: { extension: "txt", mediaType: "text/plain", text: true },
  md: { extension: "md", mediaType: "text/markdown", text: true },
  html: { extension: "html", mediaType: "text/html", text: true },
  json: { extension: "json", mediaType: "application/json", text: true },
  docx: { extension: "docx", mediaType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", text: false },
  impress: { extension: "pptx", mediaType: "application/vnd.openxmlformats-officedocument.presentationml.presentation", text: false },
  opml: { extension: "opml", mediaType: "text/x-opml", text: true },
  gkw: { extension: "gkw", mediaType: "text/markdown", text: true },
};

/** Same rule as record ids in src/shared/ids.ts; kept here so the formats stand alone. */
const CARD_ID = /^[a-z0-9]{24}$/;

/**
 * Long enough for the decoration a person writes around a card (`<div>`, `---`), short enough
 * that an anonymous request cannot multiply a big public tree: with these, an export holds at
 * most the cards' text plus 210 characters per card (issue 12; 7,000 characters on a 5,000-card
 * tree made 70 MB from a 14 KB request).
 */
export const MAX_DECORATION = 100;
export const MAX_NEWLINES = 10;

/**
 * A whole number in [min, max], as a query string sends it ("3") or as GraphQL does (3).
 * Only plain digits count: "1e2", "0x10", " 3" and "" are refused, which `Number()` would take.
 */
function wholeNumber(min: number, max: number, message: string) {
  // A number to check, from digits only; anything else is left as it is and refused below.
  // Written as a preprocess so that JSON Schema (the OpenAPI document) says integer, min, max.
  return z.preprocess(
    (value) => (typeof value === "string" && /^[0-9]{1,15}$/.test(value) ? Number(value) : value),
    z.int({ error: message }).min(min, { error: message }).max(max, { error: message }),
  );
}

/**
 * An on/off flag as a query string sends it ("1", "0", "true", "false") or as GraphQL does
 * (a boolean). Anything else is refused rather than guessed.
 */
function flag(message: string) {
  // The accepted spellings as an enum, so that the OpenAPI document lists exactly them.
  return z.union([z.boolean(), z.enum(["1", "0", "true", "false"])], { error: message }).transform((value) => value === true || value === "1" || value === "true");
}

/**
 * The export flags. Unknown keys are dropped rather than refused, so a cache-busting
 * parameter or a client's extra flag does not break a download.
 */
export const exportQuerySchema = z.object({
  cardId: z
    .string({ error: "must be a card id" })
    .regex(CARD_ID, "must be a card id: 24 characters of a-z and 0-9")
    .optional(),
  column: wholeNumber(1, Number.MAX_SAFE_INTEGER, "must be a whole number, 1 or more").optional(),
  newlines: wholeNumber(0, MAX_NEWLINES, `must be a whole number from 0 to ${MAX_NEWLINES}`).optional(),
  start: z
    .string({ error: "must be text" })
    .max(MAX_DECORATION, `must be at most ${MAX_DECORATION} characters`)
    .optional(),
  end: z
    .string({ error: "must be text" })
    .max(MAX_DECORATION, `must be at most ${MAX_DECORATION} characters`)
    .optional(),
  leaves: flag("must be 1 or 0 (true or false)")
    .optional()
    .describe("1: only the cards without children, in tree order (Gingko Writer's leaves export)"),
});

export type ExportOptions = z.output<typeof exportQuerySchema>;

/** One export to run: the tree, its live cards (any order) and the parsed flags. */
export interface ExportJob {
  format: ExportFormat;
  tree: Tree;
  cards: readonly CardFields[];
  options: ExportOptions;
  /**
   * Asked for by nobody signed in (a public tree's export): such jobs take turns on one
   * worker, so that anonymous traffic cannot hold every worker's memory at once.
   */
  anonymous?: boolean;
}

/**
 * A finished export: the file's bytes (or text), its media type and a safe file name. Bytes
 * are a Uint8Array, the type both hosts share (a Node Buffer is one; a worker thread's
 * answer arrives as a plain one), and the transports wrap them as they send.
 */
export interface ExportResult {
  body: Uint8Array | string;
  contentType: string;
  filename: string;
}
