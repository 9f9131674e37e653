import { afterEach, describe, expect, it, vi } from "vitest";
import type { ApiClient, Card, Tree } from "../api.js";
import { MemoryDevice, type TreeCopy } from "../offline/outbox.js";
import { fetchTree } from "./tree-fetch.js";

const TREE = "t".repeat(24);

function card(n: number): Card {
  return { _id: `c${n}`.padEnd(24, "0"), treeId: TREE, parentId: null, position: n, content: `Card ${n}` } as Card;
}

/** An API whose answers the test gives by hand, recording the requests in the order they were made. */
function fakeApi() {
  const asked: string[] = [];
  const pending: { trees: ((list: Tree[]) => void)[]; cards: ((answer: { cards: Card[]; revision: number | null }) => void)[] } = { trees: [], cards: [] };
  const api = {
    trees: () => (asked.push("trees"), new Promise<Tree[]>((resolve) => pending.trees.push(resolve))),
    cardsAt: () => (asked.push("cards"), new Promise<{ cards: Card[]; revision: number | null }>((resolve) => pending.cards.push(resolve))),
  } as unknown as ApiClient;
  return { api, asked, pending };
}

const treeAt = (revision: number) => ({ _id: TREE, name: "T", revision }) as Tree;
const turn = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("a tree page's requests (model/tree-fetch.ts)", () => {
  it("asks for the tree list and the cards at once, and takes the cards when they are of the listed revision", async () => {
    const { api, asked, pending } = fakeApi();
    const fetching = fetchTree(api, TREE);
    const cards = fetching.cards();
    await turn();
    expect(asked).toEqual(["trees", "cards"]);
    pending.cards[0]({ cards: [card(1), card(2)], revision: 7 });
    pending.trees[0]([treeAt(7)]);
    expect((await cards).cards.map((c) => c.content)).toEqual(["Card 1", "Card 2"]);
    expect(asked).toEqual(["trees", "cards"]);
  });

  it("asks for the cards again, after the tree list, when they were read at another revision, and takes the second answer", async () => {
    for (const [listed, read] of [
      [8, 7],
      [7, 8],
    ]) {
      const { api, asked, pending } = fakeApi();
      const cards = fetchTree(api, TREE).cards();
      pending.cards[0]({ cards: [card(1)], revision: read });
      await turn();
      expect(asked).toEqual(["trees", "cards"]);
      pending.trees[0]([treeAt(listed)]);
      await turn();
      expect(asked).toEqual(["trees", "cards", "cards"]);
      pending.cards[1]({ cards: [card(1), card(2)], revision: listed });
      expect((await cards).cards).toHaveLength(2);
    }
  });

  it("asks again when the answer did not say its revision (an older server)", async () => {
    const { api, asked, pending } = fakeApi();
    const cards = fetchTree(api, TREE).cards();
    pending.trees[0]([treeAt(3)]);
    pending.cards[0]({ cards: [card(1)], revision: null });
    await turn();
    expect(asked).toEqual(["trees", "cards", "cards"]);
    pending.cards[1]({ cards: [card(1), card(3)], revision: 3 });
    expect((await cards).cards).toHaveLength(2);
  });

  it("takes the cards as they are when the tree is not in the list (the page says it is not there)", async () => {
    const { api, asked, pending } = fakeApi();
    const fetching = fetchTree(api, TREE);
    pending.trees[0]([]);
    pending.cards[0]({ cards: [], revision: 0 });
    expect((await fetching.cards()).cards).toEqual([]);
    expect(await fetching.trees).toEqual([]);
    expect(asked).toEqual(["trees", "cards"]);
  });

  it("asks nothing more once cancelled", async () => {
    const { api, asked, pending } = fakeApi();
    const fetching = fetchTree(api, TREE);
    fetching.cancel();
    pending.trees[0]([treeAt(2)]);
    pending.cards[0]({ cards: [card(1)], revision: 1 });
    await turn();
    expect(asked).toEqual(["trees", "cards"]);
  });

  describe("the device's copy", () => {
    afterEach(() => {
      vi.unstubAllGlobals();
    });

    /** A device holding the tree's copy, which says what was asked of it. */
    function deviceWithCopy() {
      const device = new MemoryDevice();
      const asked: string[] = [];
      const copy: TreeCopy = { tree: treeAt(4), cards: [card(1)], savedAt: 1 };
      void device.saveTree(copy);
      vi.spyOn(device, "open").mockImplementation(() => void asked.push("open"));
      const loadTree = device.loadTree.bind(device);
      vi.spyOn(device, "loadTree").mockImplementation((id) => (asked.push("read"), loadTree(id)));
      return { device, asked };
    }

    it("online, opens the device's store beside the requests and reads the copy only when asked", async () => {
      vi.stubGlobal("navigator", { onLine: true });
      const { api } = fakeApi();
      const { device, asked } = deviceWithCopy();
      const fetching = fetchTree(api, TREE, device);
      expect(asked).toEqual(["open"]);
      expect((await fetching.deviceCopy(device))?.cards).toEqual([card(1)]);
      expect(asked).toEqual(["open", "read"]);
    });

    it("when the browser says it is offline, reads the copy at once and hands that read to the page", async () => {
      vi.stubGlobal("navigator", { onLine: false });
      const { api } = fakeApi();
      const { device, asked } = deviceWithCopy();
      const fetching = fetchTree(api, TREE, device);
      expect(asked).toEqual(["read"]);
      expect((await fetching.deviceCopy(device))?.tree.revision).toBe(4);
      expect(asked).toEqual(["read"]);
      // Another user's store (the session said someone else): read from it, not the early one.
      const other = new MemoryDevice();
      expect(await fetching.deviceCopy(other)).toBeNull();
    });
  });
});
