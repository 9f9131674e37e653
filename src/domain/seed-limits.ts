/**
 * The import limits every seed passes before it becomes cards (SPEC §4): bytes, then cards.
 * Shared by the import command and tree creation from a seed.
 */
import { parseSeed, countSeedCards } from "../formats/seed.js";
import type { DomainContext } from "./context.js";
import { PayloadTooLargeError } from "./errors.js";
import type { SeedNode } from "./records.js";

/**
 * Parses a seed and checks it against the import limits.
 * @throws ValidationError for a malformed JSON seed; PayloadTooLargeError past the limits.
 */
export function parseSeedWithinLimits(ctx: DomainContext, seed: string): SeedNode[] {
  if (Buffer.byteLength(seed) > ctx.config.limits.importBodyBytes) {
    throw new PayloadTooLargeError(`An import may be at most ${ctx.config.limits.importBodyBytes} bytes.`);
  }
  const nodes = parseSeed(seed);
  const count = countSeedCards(nodes);
  if (count > ctx.config.limits.importCards) {
    throw new PayloadTooLargeError(
      `This import would make ${count} cards; at most ${ctx.config.limits.importCards} are allowed at once.`,
    );
  }
  return nodes;
}
