/**
 * What the domain needs from the formats (src/formats/), as ports: reading an import's seed
 * and rendering an export. The adapter (src/formats/off-thread.ts) runs big jobs on worker
 * threads; the domain neither knows nor cares. Wired in src/server.ts and the CLI.
 */
import type { ExportJob, ExportResult } from "../../shared/export-options.js";
import type { ImportNode } from "../../shared/records.js";

export interface SeedParser {
  /**
   * Reads a seed (SPEC §7: JSON when it is JSON, Markdown otherwise) into the cards to make.
   * @throws ValidationError for JSON of the wrong shape.
   */
  parseSeed(seed: string): Promise<ImportNode[]>;
}

export interface Exporter {
  /**
   * Renders an export (SPEC §6).
   * @throws NotFoundError (cardId not in the tree), ValidationError, TooManyRequestsError
   *   (every worker busy and the queue full), LimitReachedError (too big or too slow).
   */
  exportTree(job: ExportJob): Promise<ExportResult>;
}
