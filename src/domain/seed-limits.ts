/**
 * The import limits every seed passes before it becomes cards (SPEC §4): bytes, then cards.
 * Shared by the import command and tree creation from a seed. The seed parser port reads a
 * big seed on a worker thread, so it does not stall other requests.
 */
import type { Ports } from "./context.js";
import { PayloadTooLargeError } from "../shared/errors.js";
import type { ImportNode } from "../shared/records.js";
import { countSeedCards } from "../shared/seeds.js";

/**
 * Parses a seed (on a worker thread when it is big) and checks it against the import limits.
 * @throws ValidationError for a malformed JSON seed; PayloadTooLargeError past the limits.
 */
export async function parseSeedOffThread(ctx: Ports<"config" | "seeds">, seed: string): Promise<ImportNode[]> {
  assertSeedBytes(ctx, seed);
  return withinCardLimit(ctx, await ctx.seeds.parseSeed(seed));
}

function assertSeedBytes(ctx: Ports<"config">, seed: string): void {
  if (Buffer.byteLength(seed) > ctx.config.limits.importBodyBytes) {
    throw new PayloadTooLargeError(`An import may be at most ${ctx.config.limits.importBodyBytes} bytes.`);
  }
}

function withinCardLimit(ctx: Ports<"config">, nodes: ImportNode[]): ImportNode[] {
  const count = countSeedCards(nodes);
  if (count > ctx.config.limits.importCards) {
    throw new PayloadTooLargeError(
      `This import would make ${count} cards; at most ${ctx.config.limits.importCards} are allowed at once.`,
    );
  }
  return nodes;
}
