import { describe, expect, it } from "vitest";
import { KeptReads } from "./kept-reads.js";
import type { Change } from "../../shared/changes.js";
import type { StoredCard, Tree } from "../../shared/records.js";

const AT = "2026-11-26T00:00:00.000Z";

function tree(id: string, revision: number): Tree {
  return { _id: id, __v: 0, name: id, owner: "o".repeat(24), users: ["o".repeat(24)], createdAt: AT, updatedAt: AT, revision };
}

/** A commit of one new card of `chars` characters to `treeId`, made by a write's attempt on it. */
async function commitCard(kept: KeptReads, treeId: string, chars: number): Promise<void> {
  const card = { _id: `${treeId.slice(0, 12)}${"c".repeat(12)}`, treeId, parentId: null, position: 0, content: "x".repeat(chars), createdAt: AT, updatedAt: AT, __v: 0 } as StoredCard;
  const change: Change = { treeId, revision: 2, at: AT, userId: null, kind: "card.create", before: [], after: [card] };
  await kept.run(treeId, async () => kept.committed(change, tree(treeId, 2)));
}

describe("kept reads: what memory they may hold (issue 27)", () => {
  it("keep at most 4 Mi characters of card content, forgetting the trees used longest ago", async () => {
    const kept = new KeptReads();
    const [a, b, c] = ["a", "b", "c"].map((letter) => letter.repeat(24));
    await commitCard(kept, a, 1_500_000);
    await commitCard(kept, b, 1_500_000);
    expect(kept.keptChars()).toBe(3_000_000);
    await commitCard(kept, c, 1_500_000);
    // a went: the three would hold 4.5 million.
    expect(kept.keptChars()).toBe(3_000_000);
    // A tree forgotten gives its share back.
    kept.forgetTree(b);
    expect(kept.keptChars()).toBe(1_500_000);
    /** Whether a write's first attempt on `id` is answered the tree from memory (a use forgets it after, as nothing commits here). */
    const served = async (id: string) => {
      let first: boolean | undefined;
      await kept.run(id, async (again) => {
        if (!again) first = kept.tree(id) !== undefined;
      });
      return first;
    };
    expect(await served(a)).toBe(false);
    expect(await served(c)).toBe(true);
  });
});
