import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer({ IMPORT_CARD_LIMIT: "50", IMPORT_BODY_LIMIT: String(64 * 1024) });
});
afterAll(() => server.stop());

async function ownerWithTree() {
  const alice = await buildUser(server.url);
  const tree = await buildTree(alice, { name: "Import target" });
  const [root] = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
  return { alice, tree, root };
}

const contents = (cards: any[]) => cards.map((c) => c.content);

describe("POST /api/trees/:treeId/cards/seed", () => {
  it("imports Markdown into the first column, after the existing cards, answering the new cards in tree order", async () => {
    const { alice, tree, root } = await ownerWithTree();
    const seed = "# Part one\n\nIntro.\n\n## Chapter 1\n\nText one.\n\nText two.\n\n# Part two";
    const res = await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: null, seed });
    expect(res.status).toBe(201);
    expect(contents(res.body)).toEqual(["# Part one\n\nIntro.", "## Chapter 1", "Text one.", "Text two.", "# Part two"]);
    const all = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect(all[0]._id).toBe(root._id);
    expect(contents(all).slice(1)).toEqual(contents(res.body));
    const partOne = res.body[0];
    expect(partOne.parentId).toBeNull();
    expect(partOne.position).toBeGreaterThan(root.position);
    expect(res.body[1].parentId).toBe(partOne._id);
    expect(res.body[2].parentId).toBe(res.body[1]._id);
  });

  it("reads Gingko's headings and list items as Gingko does: text\\n##Sub is a heading, an indented paragraph stays in its list", async () => {
    const { alice, tree } = await ownerWithTree();
    const seed = "# Notes\nSome text\n##Details\n- item\n\n  more of the item\n\n##Last";
    const res = await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: null, seed });
    expect(res.status).toBe(201);
    expect(contents(res.body)).toEqual(["# Notes\nSome text", "##Details\n- item\n\n  more of the item", "##Last"]);
    expect(res.body[1].parentId).toBe(res.body[0]._id);
    expect(res.body[2].parentId).toBe(res.body[0]._id);
  });

  it("imports under a card, after its children; nothing existing moves", async () => {
    const { alice, tree, root } = await ownerWithTree();
    const existing = await buildCard(alice, tree._id, { parentId: root._id, content: "existing", position: 7.5 });
    const res = await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: root._id, seed: "first\n\nsecond" });
    expect(res.status).toBe(201);
    // One depth-1 section with two blocks and no heading: an empty card with two children.
    expect(contents(res.body)).toEqual(["", "first", "second"]);
    const all = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect(contents(all)).toEqual(["", "existing", "", "first", "second"]);
    expect(all.find((c: any) => c._id === existing._id)).toEqual(existing);
  });

  it("imports a JSON tree exactly", async () => {
    const { alice, tree } = await ownerWithTree();
    const seed = JSON.stringify([{ content: "a", children: [{ content: "a1" }, { content: "a2", children: [{ content: "deep" }] }] }, { content: "b" }]);
    const res = await alice.post(`/api/trees/${tree._id}/cards/seed`, { seed });
    expect(res.status).toBe(201);
    const byId = new Map(res.body.map((c: any) => [c._id, c]));
    const depth = (c: any): number => (c.parentId && byId.has(c.parentId) ? 1 + depth(byId.get(c.parentId)) : 1);
    expect(res.body.map((c: any) => [c.content, depth(c)])).toEqual([["a", 1], ["a1", 2], ["a2", 2], ["deep", 3], ["b", 1]]);
  });

  it("a JSON seed of the wrong shape is 400 with the path of the problem, and nothing is written", async () => {
    const { alice, tree } = await ownerWithTree();
    const seed = JSON.stringify([{ content: "ok", children: [{ content: "fine" }, { content: 5 }] }]);
    const res = await alice.post(`/api/trees/${tree._id}/cards/seed`, { seed });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
    expect(res.body.details.map((d: any) => d.path)).toContain("[0].children[1].content");
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(1);
  });

  it("rejects a missing seed and a bad parent id with 400, an unknown parent with 404", async () => {
    const { alice, tree } = await ownerWithTree();
    const other = await buildTree(alice);
    const [otherRoot] = (await alice.get(`/api/trees/${other._id}/cards`)).body;
    const cases: [unknown, string][] = [
      [{ parentId: null }, "seed"],
      [{ seed: 42 }, "seed"],
      [{ seed: "# x", parentId: "nope" }, "parentId"],
    ];
    for (const [body, path] of cases) {
      const res = await alice.post(`/api/trees/${tree._id}/cards/seed`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.details.map((d: any) => d.path)).toContain(path);
    }
    // A well-formed id that is no live card of this tree names a record not found.
    const elsewhere = await alice.post(`/api/trees/${tree._id}/cards/seed`, { seed: "# x", parentId: otherRoot._id });
    expect(elsewhere.status).toBe(404);
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(1);
  });

  it("a stranger gets 404 and the anonymous 401; nothing is written", async () => {
    const { alice, tree } = await ownerWithTree();
    const stranger = await buildUser(server.url);
    expect((await stranger.post(`/api/trees/${tree._id}/cards/seed`, { seed: "# x" })).status).toBe(404);
    expect((await new Api(server.url).post(`/api/trees/${tree._id}/cards/seed`, { seed: "# x" })).status).toBe(401);
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(1);
  });

  it("too many cards is 413 and too large a body is 413; nothing is written", async () => {
    const { alice, tree } = await ownerWithTree();
    const many = Array.from({ length: 51 }, (_, i) => `# heading ${i}`).join("\n\n");
    const tooMany = await alice.post(`/api/trees/${tree._id}/cards/seed`, { seed: many });
    expect(tooMany.status).toBe(413);
    expect(tooMany.body.error).toBe("payload_too_large");
    const tooBig = await alice.post(`/api/trees/${tree._id}/cards/seed`, { seed: "x".repeat(70 * 1024) });
    expect(tooBig.status).toBe(413);
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(1);
  });

  it("imports a 10,000-level JSON chain without overflowing the stack", async () => {
    const big = await startInProcessServer();
    try {
      const alice = await buildUser(big.url);
      const tree = await buildTree(alice);
      // Written by hand: JSON.stringify itself recurses and cannot build this.
      const opening = Array.from({ length: 9_999 }, (_, i) => `{"content":"level ${i + 1}","children":[`).join("");
      const seed = `[${opening}{"content":"bottom"}${"]}".repeat(9_999)}]`;
      const res = await alice.post(`/api/trees/${tree._id}/cards/seed`, { seed });
      expect(res.status).toBe(201);
      expect(res.body).toHaveLength(10_000);
      expect(res.body[9_999].content).toBe("bottom");
      expect(res.body[9_999].parentId).toBe(res.body[9_998]._id);
    } finally {
      await big.stop();
    }
  });
});

describe("POST /api/trees with a seed", () => {
  it("creates the tree from Markdown instead of the empty card", async () => {
    const alice = await buildUser(server.url);
    const res = await alice.post("/api/trees", { name: "Seeded", seed: "# A\n\n## B" });
    expect(res.status).toBe(201);
    expect(contents((await alice.get(`/api/trees/${res.body._id}/cards`)).body)).toEqual(["# A", "## B"]);
  });

  it("a bad JSON seed creates no tree", async () => {
    const alice = await buildUser(server.url);
    const res = await alice.post("/api/trees", { name: "Broken", seed: '[{"content": 1}]' });
    expect(res.status).toBe(400);
    expect((await alice.get("/api/trees")).body).toEqual([]);
  });
});
