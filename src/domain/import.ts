/**
 * Import (SPEC §7): a Markdown or JSON seed becomes a subtree under `parentId`, after the
 * existing children, all or nothing. Parsing lives in src/formats/; this is the command.
 */
import { MissingParentError } from "../shared/errors.js";
import type { StoredCard } from "../shared/records.js";
import { seedInput } from "../shared/schemas.js";
import { assertCardsFit, cardsFromSeed, positionAfter, withFileIds, withinCardAllowance } from "./card-batches.js";
import { seedInTreeOrder } from "../shared/seeds.js";
import { parseSeedOffThread } from "./seed-limits.js";
import { commitChange } from "./changes.js";
import { treeCommand } from "./command.js";

/**
 * Imports `seed` under `parentId` (null: the first column) after the existing children.
 * Returns the created cards in tree order.
 * @throws ValidationError (also for an unknown parent), PayloadTooLargeError,
 *   LimitReachedError, and the policy's errors.
 */
export const importSeed = treeCommand({
  name: "importSeed",
  needs: ["store", "config", "seeds", "clock", "feed", "ownerLocks"],
  input: seedInput,
  action: "write",
  async run(ctx, actor, tree, _target: { treeId: string }, { parentId = null, seed }): Promise<StoredCard[]> {
    const nodes = await parseSeedOffThread(ctx, seed);
    const live = await ctx.store.cards.liveByTree(tree._id);
    if (parentId !== null && !live.some((c) => c._id === parentId)) {
      throw new MissingParentError();
    }
    const firstPosition = positionAfter(live.filter((c) => c.parentId === parentId));
    const at = ctx.clock.now();
    const place = { treeId: tree._id, parentId, firstPosition, at, author: actor._id };
    const inOrder = seedInTreeOrder(nodes);
    assertCardsFit(ctx, inOrder);
    return withinCardAllowance(ctx, tree.owner, inOrder.length, () =>
      withFileIds(ctx, nodes, async (keepIds) => {
        const cards = cardsFromSeed(nodes, place, keepIds);
        const { change } = await commitChange(ctx, actor, tree, { kind: "import", after: cards, at });
        return change.after;
      }),
    );
  },
  replay: (_ctx, change) => change.after,
});
