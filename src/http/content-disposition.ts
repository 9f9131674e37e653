/**
 * The download header for an export.
 */
import { LONE_SURROGATE } from "../shared/text.js";

// C0, DEL, C1, line and paragraph separators, and the bidi marks, embeddings, overrides and isolates.
const CONTROLS_AND_BIDI = /[\p{Cc}\u2028\u2029\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

/**
 * A `Content-Disposition: attachment` value for `filename` (RFC 6266): an ASCII
 * `filename` for old clients and `filename*` in UTF-8 (RFC 8187) so any name survives.
 * Quotes, backslashes and percent signs never reach the header raw; control characters and
 * bidi controls (which can make `invoice\u202Egpj.exe` display as `invoiceexe.jpg`) are
 * dropped from both forms. Throws nothing.
 */
export function contentDisposition(filename: string): string {
  const wellFormed = filename.replace(LONE_SURROGATE, "\uFFFD").replace(CONTROLS_AND_BIDI, "");
  const fallback = wellFormed
    // "Résumé" reads better as "Resume" than as "R_sum_".
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    // Some browsers decode % in the plain parameter; quotes and backslashes would end or escape it.
    .replace(/[^\x20-\x7e]|["\\%]/gu, "_");
  const encoded = encodeURIComponent(wellFormed).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
