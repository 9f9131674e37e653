/**
 * Concurrency (issue 7.2): writes racing on one tree must leave a valid tree: no orphan,
 * no cycle, no duplicate. The domain serialises writes per tree (KeyedLock); these races
 * go through HTTP to the real server, all at once.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { cardsOf, expectValidTree } from "./tree-checks.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

describe("racing writes on one tree", () => {
  it("concurrent edits of one card: every one answered, the last one applied stays whole", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const card = await buildCard(alice, tree._id, { content: "start", position: 1 });
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) => alice.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: `edit ${i}`, position: i })),
    );
    expect(replies.every((r) => r.status === 200)).toBe(true);
    const final = (await cardsOf(alice, tree._id)).find((c) => c._id === card._id);
    // Content and position come from the same request: no torn mix of two edits.
    expect(final.content).toBe(`edit ${final.position}`);
  });

  it("moves that would make a cycle together: at most one of each pair wins, never a cycle", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    for (let round = 0; round < 15; round++) {
      const a = await buildCard(alice, tree._id, { content: `a${round}`, position: round });
      const b = await buildCard(alice, tree._id, { content: `b${round}`, position: round + 0.5 });
      const c = await buildCard(alice, tree._id, { content: `c${round}`, parentId: b._id });
      const replies = await Promise.all([
        alice.put(`/api/trees/${tree._id}/cards/${a._id}`, { parentId: c._id }),
        alice.put(`/api/trees/${tree._id}/cards/${b._id}`, { parentId: a._id }),
      ]);
      expect(replies.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(1);
      expect(replies.every((r) => r.status === 200 || r.status === 409)).toBe(true);
      expectValidTree(await cardsOf(alice, tree._id));
    }
  });

  it("concurrent imports into one parent all land, after each other, with no position twice", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const parent = (await cardsOf(alice, tree._id))[0];
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: parent._id, seed: `# import ${i}\n\n## child\n\n# second ${i}` }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(201));
    const cards = await cardsOf(alice, tree._id);
    expect(cards).toHaveLength(1 + 8 * 3);
    const positions = cards.filter((c) => c.parentId === parent._id).map((c) => c.position);
    expect(new Set(positions).size).toBe(16);
    expectValidTree(cards);
  });

  it("deleting a parent while a child is created under it leaves no orphan", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    for (let round = 0; round < 15; round++) {
      const parent = await buildCard(alice, tree._id, { content: `p${round}`, position: round });
      const [created, deleted] = await Promise.all([
        alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, parentId: parent._id, position: 0, content: "child" }),
        alice.delete(`/api/trees/${tree._id}/cards/${parent._id}`),
      ]);
      expect(deleted.status).toBe(200);
      expect([201, 404]).toContain(created.status);
      if (created.status === 201) expect(deleted.body.deleted).toContain(created.body._id);
      expectValidTree(await cardsOf(alice, tree._id));
    }
  });

  it("random batches of concurrent creates, moves and deletes keep a valid tree", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { seed: "# a\n\n## b\n\n### c\n\n# d\n\n## e" });
    const op = fc.record({ kind: fc.constantFrom("create", "move", "delete", "import"), x: fc.nat(), y: fc.nat() });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 10 }), async (ops) => {
        const cards = await cardsOf(alice, tree._id);
        const pick = (n: number) => (cards.length === 0 ? null : cards[n % cards.length]);
        await Promise.all(
          ops.map(({ kind, x, y }) => {
            const a = pick(x);
            const b = pick(y);
            const base = `/api/trees/${tree._id}/cards`;
            if (kind === "create" || !a) return alice.post(base, { treeId: tree._id, parentId: b?._id ?? null, position: x % 7 });
            if (kind === "move") return alice.put(`${base}/${a._id}`, { parentId: b?._id ?? null });
            if (kind === "import") return alice.post(`${base}/seed`, { parentId: a._id, seed: "# i\n\n## j" });
            return cards.length > 3 ? alice.delete(`${base}/${a._id}`) : Promise.resolve();
          }),
        );
        expectValidTree(await cardsOf(alice, tree._id));
      }),
      { numRuns: 25 },
    );
  }, 60_000);
});
