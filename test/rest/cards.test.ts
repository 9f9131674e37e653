import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { cachedBodies } from "../../src/http/compression.js";
import { buildCard, buildTree, buildUser, shareTree } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

async function treeWithRoot() {
  const alice = await buildUser(server.url);
  const tree = await buildTree(alice);
  const [root] = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
  return { alice, tree, root };
}

describe("cards", () => {
  it("are listed in tree order: siblings by position, fractional positions between", async () => {
    const { alice, tree, root } = await treeWithRoot();
    const b = await buildCard(alice, tree._id, { parentId: root._id, content: "b", position: 2 });
    await buildCard(alice, tree._id, { parentId: root._id, content: "a", position: 1 });
    await buildCard(alice, tree._id, { parentId: root._id, content: "a½", position: 1.5 });
    await buildCard(alice, tree._id, { parentId: b._id, content: "b.1", position: 0 });
    await buildCard(alice, tree._id, { content: "second root", position: 10 });
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect(cards.map((c: any) => c.content)).toEqual(["", "a", "a½", "b", "b.1", "second root"]);
  });

  it("creation validates position, treeId and parent", async () => {
    const { alice, tree } = await treeWithRoot();
    const other = await buildTree(alice);
    const [otherRoot] = (await alice.get(`/api/trees/${other._id}/cards`)).body;
    const path = `/api/trees/${tree._id}/cards`;
    const cases: [unknown, string][] = [
      [{ treeId: tree._id }, "position"],
      [{ treeId: tree._id, position: "1" }, "position"],
      [{ position: 1 }, "treeId"],
      [{ treeId: other._id, position: 1 }, "treeId"],
      [{ treeId: tree._id, position: 1, parentId: "nope" }, "parentId"],
      [{ treeId: tree._id, position: 1, content: 5 }, "content"],
    ];
    for (const [body, field] of cases) {
      const res = await alice.post(path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.details.map((d: any) => d.path)).toContain(field);
    }
    // A well-formed parent id that is no live card of this tree: a record not found.
    expect((await alice.post(path, { treeId: tree._id, position: 1, parentId: otherRoot._id })).status).toBe(404);
    expect((await alice.get(path)).body).toHaveLength(1);
  });

  it("PUT applies only content, position and parentId, moving the tree's updatedAt", async () => {
    const { alice, tree, root } = await treeWithRoot();
    const card = await buildCard(alice, tree._id, { content: "old" });
    const res = await alice.put(`/api/trees/${tree._id}/cards/${card._id}`, {
      ...card,
      content: "new",
      position: 3,
      parentId: root._id,
      _id: "aaaaaaaaaaaaaaaaaaaaaaaa",
      treeId: "bbbbbbbbbbbbbbbbbbbbbbbb",
      createdAt: "1999-01-01T00:00:00.000Z",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ _id: card._id, treeId: tree._id, content: "new", position: 3, parentId: root._id, createdAt: card.createdAt });
    expect(res.body.updatedAt >= card.updatedAt).toBe(true);
    const after = (await alice.get("/api/trees")).body.find((t: any) => t._id === tree._id);
    expect(after.updatedAt >= res.body.updatedAt).toBe(true);
    expect(after.__v).toBe(0);
  });

  it("PUT refuses wrong-typed fields with 400 and details, changing nothing", async () => {
    const { alice, tree, root } = await treeWithRoot();
    const card = await buildCard(alice, tree._id, { parentId: root._id, content: "as it was", position: 4 });
    const path = `/api/trees/${tree._id}/cards/${card._id}`;
    const other = await buildTree(alice);
    const [otherRoot] = (await alice.get(`/api/trees/${other._id}/cards`)).body;
    const cases: [unknown, string][] = [
      [{ position: "5" }, "position"],
      [{ position: null }, "position"],
      [{ content: 5 }, "content"],
      [{ content: "changed", parentId: "nope" }, "parentId"],
    ];
    for (const [body, field] of cases) {
      const res = await alice.put(path, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.details.map((d: any) => d.path)).toContain(field);
    }
    expect((await alice.put(path, { content: "changed", parentId: otherRoot._id })).status).toBe(404);
    const after = (await alice.get(`/api/trees/${tree._id}/cards`)).body.find((c: any) => c._id === card._id);
    expect(after).toEqual(card);
  });

  it("PUT with parentId null moves a card to the first column", async () => {
    const { alice, tree, root } = await treeWithRoot();
    const child = await buildCard(alice, tree._id, { parentId: root._id, content: "child", position: 1 });
    const res = await alice.put(`/api/trees/${tree._id}/cards/${child._id}`, { parentId: null, position: 2 });
    expect(res.status).toBe(200);
    expect(res.body.parentId).toBeNull();
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect(cards.map((c: any) => [c.content, c.parentId])).toEqual([["", null], ["child", null]]);
  });

  it("answers ids and ISO 8601 UTC timestamps with milliseconds", async () => {
    const { alice, tree } = await treeWithRoot();
    const card = await buildCard(alice, tree._id, { content: "stamped" });
    const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
    expect(card._id).toMatch(/^[a-z0-9]{24}$/);
    for (const field of ["createdAt", "updatedAt"]) {
      expect(card[field], `card ${field}`).toMatch(iso);
      expect(tree[field], `tree ${field}`).toMatch(iso);
    }
  });

  it("refuses cycles: a card under itself or under its descendant", async () => {
    const { alice, tree, root } = await treeWithRoot();
    const child = await buildCard(alice, tree._id, { parentId: root._id });
    const grandchild = await buildCard(alice, tree._id, { parentId: child._id });
    for (const parentId of [root._id, child._id, grandchild._id]) {
      const res = await alice.put(`/api/trees/${tree._id}/cards/${root._id}`, { parentId });
      // The tree's shape refuses it, not the request's form (the document allows any card id).
      expect(res.status).toBe(409);
      expect(res.body.message).toMatch(/under itself or one of its descendants/);
    }
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect(cards.find((c: any) => c._id === root._id).parentId).toBeNull();
  });

  it("DELETE trashes the card and its subtree; reads never show them again", async () => {
    const { alice, tree, root } = await treeWithRoot();
    const child = await buildCard(alice, tree._id, { parentId: root._id });
    const grandchild = await buildCard(alice, tree._id, { parentId: child._id });
    const keep = await buildCard(alice, tree._id, { position: 5 });
    // Counted before the delete too, so a count kept from before it would show.
    expect((await alice.get("/api/index")).body.cardsCount).toBe(4);
    const res = await alice.delete(`/api/trees/${tree._id}/cards/${root._id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: [root._id, child._id, grandchild._id] });
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body.map((c: any) => c._id)).toEqual([keep._id]);
    expect((await alice.put(`/api/trees/${tree._id}/cards/${child._id}`, { content: "x" })).status).toBe(404);
    expect((await alice.delete(`/api/trees/${tree._id}/cards/${child._id}`)).status).toBe(404);
    expect((await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, parentId: child._id })).status).toBe(404);
    expect((await alice.get("/api/index")).body.cardsCount).toBe(1);
  });

  it("GET /api/cards lists every live card of every tree the user can open", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const mine = await buildTree(alice, { seed: "# a\n\n## a1" });
    const shared = await buildTree(bob, { seed: "# b" });
    await buildTree(bob, { seed: "# private" });
    await bob.post(`/api/trees/${shared._id}/collaborators`, { email: alice.user.email });
    const cards = (await alice.get("/api/cards")).body;
    expect(cards.map((c: any) => c.content).sort()).toEqual(["# a", "# b", "## a1"]);
    const ofMine = cards.filter((c: any) => c.treeId === mine._id).map((c: any) => c.content);
    expect(ofMine).toEqual(["# a", "## a1"]);
  });

  it("the card limit answers 422 limit_reached and creates nothing", async () => {
    const { alice, tree } = await treeWithRoot();
    await server.ctx.store.users.update(alice.user._id, { limit: 2 });
    await buildCard(alice, tree._id);
    const res = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 9 });
    expect(res.status).toBe(422);
    expect(res.body.error).toBe("limit_reached");
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(2);
    expect((await alice.post(`/api/trees/${tree._id}/clone`)).status).toBe(422);
  });

  it("PUT of another tree's card through this tree's path is 404 and changes neither tree", async () => {
    const { alice, tree } = await treeWithRoot();
    const other = await buildTree(alice);
    const [otherRoot] = (await alice.get(`/api/trees/${other._id}/cards`)).body;
    const before = (await alice.get(`/api/trees/${tree._id}`)).body;
    const res = await alice.put(`/api/trees/${tree._id}/cards/${otherRoot._id}`, { content: "moved in" });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
    expect((await alice.get(`/api/trees/${other._id}/cards`)).body).toEqual([otherRoot]);
    expect((await alice.get(`/api/trees/${tree._id}`)).body).toEqual(before);
  });

  it("a collaborator's new card counts against the tree owner's limit, not the collaborator's", async () => {
    const { alice, tree, root } = await treeWithRoot();
    const bob = await buildUser(server.url);
    await shareTree(alice, tree._id, bob);
    await server.ctx.store.users.update(alice.user._id, { limit: 2 });
    await buildCard(bob, tree._id, { parentId: root._id });
    const res = await bob.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, parentId: root._id, position: 9 });
    expect(res.status).toBe(422);
    expect(res.body.error).toBe("limit_reached");
    expect((await bob.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(2);
  });

  it("a tree just written in bulk has its card list's compressed copy started before anyone reads it", async () => {
    const { alice, tree } = await treeWithRoot();
    const prepare = vi.spyOn(cachedBodies, "prepare");
    try {
      const seed = JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ content: `part ${i} ${"words ".repeat(20)}`, children: Array.from({ length: 29 }, (_, j) => ({ content: `${i}.${j} ${"more words ".repeat(10)}` })) })));
      expect((await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: null, seed })).status).toBe(201);
      // Prepared once the writes pause: the body handed over is the list a reader then gets.
      await vi.waitFor(() => expect(prepare).toHaveBeenCalled(), { timeout: 5_000, interval: 50 });
      const body = prepare.mock.calls.at(-1)![0];
      const listed = await alice.get(`/api/trees/${tree._id}/cards`);
      expect(JSON.parse(body.toString("utf8"))).toEqual(listed.body);
      expect(listed.body).toHaveLength(1 + 40 * 30);
    } finally {
      prepare.mockRestore();
    }
  });
});
