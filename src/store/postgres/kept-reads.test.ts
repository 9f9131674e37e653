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

describe("kept reads: a busy tree's copy from write to write (issue 27)", () => {
  const id = "t".repeat(24);
  const cardOf = (letter: string, content: string, trashed?: string) =>
    ({ _id: letter.repeat(24), treeId: id, parentId: null, position: 0, content, createdAt: AT, updatedAt: AT, __v: 0, ...(trashed ? { trashed } : {}) }) as StoredCard;
  /**
   * A write's attempt that reads the kept tree (when there is one), then `reads` (what it is
   * answered from memory), and commits `cards` as the next revision.
   */
  const write = (kept: KeptReads, revision: number, cards: StoredCard[], reads?: () => void) =>
    kept.run(id, async () => {
      kept.tree(id);
      reads?.();
      const change: Change = { treeId: id, revision, at: AT, userId: null, kind: "card.update", before: [], after: cards };
      await kept.committing(change);
      kept.committed(change, tree(id, revision));
    });
  const content = (kept: KeptReads, letter: string) => kept.liveCard(letter.repeat(24))?.content;

  it("carry the cards of earlier writes, each counted once, an edit in place of the old, a card trashed gone", async () => {
    const kept = new KeptReads();
    await write(kept, 2, [cardOf("a", "x".repeat(10))]);
    let seen: (string | undefined)[] = [];
    await write(kept, 3, [cardOf("b", "y".repeat(20))], () => (seen = [content(kept, "a")]));
    // The first write's card is still there for the second.
    expect(seen).toEqual(["x".repeat(10)]);
    expect(kept.keptChars()).toBe(30);
    await write(kept, 4, [cardOf("a", "z".repeat(5))], () => (seen = [content(kept, "a"), content(kept, "b")]));
    expect(seen).toEqual(["x".repeat(10), "y".repeat(20)]);
    expect(kept.keptChars()).toBe(25);
    await write(kept, 5, [cardOf("b", "y".repeat(20), AT)]);
    expect(kept.keptChars()).toBe(5);
    await write(kept, 6, [], () => (seen = [content(kept, "a"), content(kept, "b")]));
    expect(seen).toEqual(["z".repeat(5), undefined]);
  });

  it("hand out copies: what a write does to the records it was answered changes nothing kept", async () => {
    const kept = new KeptReads();
    const card = cardOf("a", "first");
    await write(kept, 2, [card]);
    card.content = "changed after the commit";
    const seen: (string | undefined)[] = [];
    await write(kept, 3, [], () => {
      const served = kept.liveCard("a".repeat(24))!;
      seen.push(served.content);
      served.content = "changed by a reader";
      seen.push(content(kept, "a"));
      const read = kept.tree(id) ?? tree(id, 0);
      read.users.push("x".repeat(24));
      read.name = "renamed";
      seen.push(kept.tree(id)?.name);
    });
    expect(seen).toEqual(["first", "first", id]);
    // The tree a commit leaves, changed by its writer after the commit.
    const left = tree(id, 4);
    await kept.run(id, async () => {
      kept.tree(id);
      const change: Change = { treeId: id, revision: 4, at: AT, userId: null, kind: "card.update", before: [], after: [] };
      await kept.committing(change);
      kept.committed(change, left);
    });
    left.name = "renamed after";
    let again: unknown;
    await write(kept, 5, [], () => (again = kept.tree(id)));
    expect(again).toEqual(tree(id, 4));
  });

  it("check a kept user against the record exactly as it was read, whatever its copies go through", async () => {
    const kept = new KeptReads();
    const user = { _id: "u".repeat(24), email: "a@example.com", passwordHash: "h", limit: 10, favoriteTrees: ["f"], randomIndex: 0.5, userHash: "x", createdAt: AT };
    await write(kept, 2, [], () => kept.userRead(structuredClone(user)));
    let guards: unknown;
    await kept.run(id, async () => {
      kept.tree(id);
      const served = kept.user(user._id)!;
      expect(served).toEqual(user);
      served.limit = 1_000;
      served.favoriteTrees.push("g");
      expect(kept.user(user._id)).toEqual(user);
      const change: Change = { treeId: id, revision: 3, at: AT, userId: null, kind: "card.create", before: [], after: [] };
      guards = (await kept.committing(change)).guards;
      kept.committed(change, tree(id, 3));
    });
    expect(guards).toEqual([{ userId: user._id, record: JSON.stringify(user) }]);
  });
});
