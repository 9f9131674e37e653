/**
 * The read model's budget (READ_MODEL_CARDS): how many cards one process keeps as whole
 * trees, least recently read dropped first; a tree bigger than the whole budget is still
 * kept, alone (otherwise every read of it, and every level of a GraphQL whole-tree query,
 * would load it from the store again). On the in-memory store, counting the store's loads
 * of a tree's cards.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import { execute } from "../../src/domain/command.js";
import { createDomainContext, type DomainContext } from "../../src/domain/context.js";
import type { Actor } from "../../src/domain/policy.js";
import type { Store } from "../../src/domain/ports/store.js";
import { createTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import type { Tree } from "../../src/shared/records.js";
import { openMemoryStore } from "../../src/store/memory-store.js";

let loads: string[];

function context(env: Record<string, string>): DomainContext {
  const config = loadConfig({ SIGNUP: "open", EXPORT_WORKERS: "0", ...env });
  const store = openMemoryStore();
  const counted: Store = {
    ...store,
    cards: {
      ...store.cards,
      liveByTree: (treeId) => {
        loads.push(treeId);
        return store.cards.liveByTree(treeId);
      },
    },
  };
  return createDomainContext(counted, config, { formats: formatsOffThread(config.exports), hasher: scryptHasherFor(config.limits) });
}

const TEN_HEADINGS = Array.from({ length: 10 }, (_, i) => `# Card ${i + 1}`).join("\n\n");

async function twoTrees(ctx: DomainContext): Promise<[Tree, Tree]> {
  const alice: Actor = await execute(ctx, null, signUp, {}, { email: "alice@example.com", password: "correct horse battery" });
  const first = await execute(ctx, alice, createTree, {}, { name: "First", seed: TEN_HEADINGS });
  const second = await execute(ctx, alice, createTree, {}, { name: "Second", seed: TEN_HEADINGS });
  return [first, second];
}

async function cardsRead(ctx: DomainContext, tree: Tree): Promise<number> {
  return (await ctx.readModel.read(tree)).places().cards.length;
}

beforeEach(() => {
  loads = [];
});

describe("the read model's budget", () => {
  it("keeps two ten-card trees within 25 cards: each is loaded from the store once", async () => {
    const ctx = context({ READ_MODEL_CARDS: "25" });
    const [first, second] = await twoTrees(ctx);
    for (let i = 0; i < 3; i++) {
      expect(await cardsRead(ctx, first)).toBe(10);
      expect(await cardsRead(ctx, second)).toBe(10);
    }
    expect(loads).toEqual([first._id, second._id]);
  });

  it("drops the least recently read tree past the budget, and keeps a tree bigger than the budget alone", async () => {
    const ctx = context({ READ_MODEL_CARDS: "5" });
    const [first, second] = await twoTrees(ctx);
    expect(await cardsRead(ctx, first)).toBe(10);
    expect(await cardsRead(ctx, first)).toBe(10);
    expect(loads).toEqual([first._id]);
    expect(await cardsRead(ctx, second)).toBe(10);
    expect(await cardsRead(ctx, second)).toBe(10);
    expect(await cardsRead(ctx, first)).toBe(10);
    expect(loads).toEqual([first._id, second._id, first._id]);
  });
});
