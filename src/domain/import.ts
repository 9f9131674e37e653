/**
 * Import (SPEC §7): a Markdown or JSON seed becomes a subtree under `parentId`, after the
 * existing children, all or nothing. Parsing lives in src/formats/; this is the command.
 */
import { parseSeed, countSeedCards } from "../formats/seed.js";
import type { DomainContext } from "./context.js";
import { PayloadTooLargeError, ValidationError } from "./errors.js";
import { now } from "./ids.js";
import type { Actor } from "./policy.js";
import type { SeedNode, StoredCard } from "./records.js";
import { parseInput, seedInput } from "./schemas.js";
import { assertCardAllowance, cardsFromSeed } from "./card-batches.js";
import { touchTree, withTree } from "./trees.js";
import { positionAfter } from "./cards.js";

/**
 * Parses a seed and checks it against the import limits.
 * @throws ValidationError for a malformed JSON seed; PayloadTooLargeError past the limits.
 */
export function parseSeedWithinLimits(ctx: DomainContext, seed: string): SeedNode[] {
  if (Buffer.byteLength(seed) > ctx.config.limits.importBodyBytes) {
    throw new PayloadTooLargeError(`An import may be at most ${ctx.config.limits.importBodyBytes} bytes.`);
  }
  return withinCardLimit(ctx, parseSeed(seed));
}

function withinCardLimit(ctx: DomainContext, nodes: SeedNode[]): SeedNode[] {
  const count = countSeedCards(nodes);
  if (count > ctx.config.limits.importCards) {
    throw new PayloadTooLargeError(
      `This import would make ${count} cards; at most ${ctx.config.limits.importCards} are allowed at once.`,
    );
  }
  return nodes;
}

/**
 * `parseSeedWithinLimits` with the parse on a worker thread (src/formats/export/worker-pool.ts),
 * so a 16 MiB seed does not stall other requests.
 */
async function parseSeedOffThread(ctx: DomainContext, seed: string): Promise<SeedNode[]> {
  if (Buffer.byteLength(seed) > ctx.config.limits.importBodyBytes) return parseSeedWithinLimits(ctx, seed);
  const { parseSeedOffThread: parse } = await import("../formats/export/worker-pool.js");
  return withinCardLimit(ctx, await parse(ctx.config.exports, seed));
}

/**
 * Imports `seed` under `parentId` (null: the first column) after the existing children.
 * Returns the created cards in tree order.
 * @throws ValidationError (also for an unknown parent), PayloadTooLargeError,
 *   LimitReachedError, and the policy's errors.
 */
export async function importSeed(ctx: DomainContext, actor: Actor, treeId: string, input: unknown): Promise<StoredCard[]> {
  const { parentId = null, seed } = parseInput(seedInput, input);
  return withTree(ctx, actor, treeId, "write", async (tree) => {
    const nodes = await parseSeedOffThread(ctx, seed);
    const live = await ctx.store.cards.liveByTree(tree._id);
    if (parentId !== null && !live.some((c) => c._id === parentId)) {
      throw new ValidationError("The parent card does not exist in this tree.", [
        { path: "parentId", message: "must be a live card of the same tree" },
      ]);
    }
    const firstPosition = positionAfter(live.filter((c) => c.parentId === parentId));
    const at = now();
    const cards = cardsFromSeed(nodes, { treeId: tree._id, parentId, firstPosition, at, author: actor._id });
    await assertCardAllowance(ctx, tree.owner, cards.length);
    await ctx.store.cards.insertMany(cards);
    await touchTree(ctx, tree, at);
    return cards;
  });
}
