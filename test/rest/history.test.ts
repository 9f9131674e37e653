/**
 * SPEC §10 over REST: conditional writes (If-Match, __v), the history of a tree and of a
 * card, restoring a tree to a revision, the trash and restoring a deleted subtree.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildSharedTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer({ SIGNUP_LIMIT_PER_ADDRESS: "-1", SIGNUP_LIMIT_TOTAL: "-1" });
});
afterAll(() => server.stop());

const sharedTree = () => buildSharedTree(server.url);

const treeOf = async (api: Api, treeId: string) => (await api.get("/api/trees")).body.find((t: any) => t._id === treeId);

/** What a restore brings back, by card id: content, parent and position of the live cards. */
async function shape(api: Api, treeId: string) {
  const cards = (await api.get(`/api/trees/${treeId}/cards`)).body as any[];
  const tree = await treeOf(api, treeId);
  return {
    name: tree.name,
    cards: Object.fromEntries(cards.map((c) => [c._id, { content: c.content, parentId: c.parentId, position: c.position }])),
  };
}

describe("conditional writes", () => {
  it("two collaborators saving the same version: exactly one 409, and no text is lost silently", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const path = `/api/trees/${tree._id}/cards/${root._id}`;
    const read = (await alice.get(`/api/trees/${tree._id}/cards`)).body[0];
    const [a, b] = await Promise.all([
      alice.put(path, { content: "alice's words" }, { "if-match": `"${read.__v}"` }),
      bob.put(path, { content: "bob's words", __v: read.__v }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const [winner, loser] = a.status === 200 ? [a, b] : [b, a];
    expect(loser.body.error).toBe("conflict");
    expect(loser.body.details.current).toEqual(winner.body);
    const [now] = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect(now).toEqual(winner.body);
    expect(now.__v).toBe(read.__v + 1);
  });

  it("accepts W/ and unquoted versions and *, refuses garbage with 400, and stale deletes with 409", async () => {
    const { alice, tree, root } = await sharedTree();
    const path = `/api/trees/${tree._id}/cards/${root._id}`;
    expect((await alice.put(path, { content: "one" }, { "if-match": 'W/"0"' })).status).toBe(200);
    expect((await alice.put(path, { content: "two" }, { "if-match": "1" })).status).toBe(200);
    expect((await alice.put(path, { content: "three" }, { "if-match": "*" })).status).toBe(200);
    const before = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    for (const garbage of ['"abc"', '"-1"', '"1.5"', '"1", "2"', "x"]) {
      const res = await alice.put(path, { content: "garbage" }, { "if-match": garbage });
      expect(res.status, garbage).toBe(400);
      expect(res.body.error).toBe("invalid_request");
    }
    expect((await alice.put(path, { content: "bad body version", __v: -1 })).status).toBe(400);
    const stale = await alice.delete(path, { "if-match": '"0"' });
    expect(stale.status).toBe(409);
    expect(stale.body.details.current.content).toBe("three");
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toEqual(before);
    expect((await alice.delete(path, { "if-match": `"${before[0].__v}"` })).status).toBe(200);
  });

  it("without a version a write applies as before", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const path = `/api/trees/${tree._id}/cards/${root._id}`;
    await alice.put(path, { content: "first" });
    const res = await bob.put(path, { content: "second" });
    expect(res.status).toBe(200);
    expect(res.body.__v).toBe(2);
  });
});

describe("history", () => {
  it("lists the tree's changes newest first, by pages, and a card's versions", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const card = await buildCard(alice, tree._id, { parentId: root._id, content: "v0" });
    await bob.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "v1" });
    await alice.put(`/api/trees/${tree._id}/cards/${card._id}`, { position: 5 });
    const history = (await alice.get(`/api/trees/${tree._id}/history`)).body;
    expect(history.map((c: any) => c.kind)).toEqual(["card.move", "card.update", "card.create", "tree.share", "tree.create"]);
    expect(history.map((c: any) => c.revision)).toEqual([5, 4, 3, 2, 1]);
    expect(history[1]).toMatchObject({ userId: bob.user._id, cardIds: [card._id], titles: ["v1"] });
    expect(history[2]).toMatchObject({ cardIds: [card._id], titles: ["v0"] });
    expect((await treeOf(alice, tree._id)).revision).toBe(5);
    const page = (await alice.get(`/api/trees/${tree._id}/history?before=4&limit=2`)).body;
    expect(page.map((c: any) => c.revision)).toEqual([3, 2]);
    const versions = (await bob.get(`/api/trees/${tree._id}/cards/${card._id}/versions`)).body;
    expect(versions.map((v: any) => [v.__v, v.content])).toEqual([[2, "v1"], [1, "v1"], [0, "v0"]]);
    expect(versions[1].userId).toBe(bob.user._id);
  });

  it("names each card of a change by its first words, a deleted one as it was", async () => {
    const { alice, tree, root } = await sharedTree();
    const card = await buildCard(alice, tree._id, { parentId: root._id, content: "\n## *Last* words of a card that goes\nmore" });
    await alice.delete(`/api/trees/${tree._id}/cards/${card._id}`);
    const [deleted, created] = (await alice.get(`/api/trees/${tree._id}/history?limit=2`)).body;
    expect(deleted).toMatchObject({ kind: "card.delete", cardIds: [card._id], titles: ["Last words of a card that goes"] });
    expect(created).toMatchObject({ kind: "card.create", cardIds: [card._id], titles: ["Last words of a card that goes"] });
  });

  it("refuses a bad before or limit with 400, and an unknown card with 404", async () => {
    const { alice, tree } = await sharedTree();
    for (const query of ["before=-1", "before=0", "before=x", "limit=0", "limit=1.5", "limit=100000", "before=1&before=2"]) {
      const res = await alice.get(`/api/trees/${tree._id}/history?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error).toBe("invalid_request");
    }
    expect((await alice.get(`/api/trees/${tree._id}/cards/${"a".repeat(24)}/versions`)).status).toBe(404);
    expect((await alice.get(`/api/trees/${tree._id}/cards/nope/versions`)).status).toBe(400);
  });
});

describe("restoring a tree", () => {
  it("brings it back to a revision as a new change, and back again to the identical tree", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const a = await buildCard(alice, tree._id, { parentId: root._id, content: "a", position: 1 });
    const b = await buildCard(alice, tree._id, { parentId: root._id, content: "b", position: 2 });
    await buildCard(alice, tree._id, { parentId: a._id, content: "a.1" });
    const early = await shape(alice, tree._id);
    const earlyRevision = (await treeOf(alice, tree._id)).revision;

    await bob.put(`/api/trees/${tree._id}/cards/${b._id}`, { content: "b edited", parentId: null, position: 7 });
    await alice.delete(`/api/trees/${tree._id}/cards/${a._id}`);
    await buildCard(bob, tree._id, { parentId: b._id, content: "new under b" });
    await alice.put(`/api/trees/${tree._id}`, { name: "renamed" });
    const late = await shape(alice, tree._id);
    const lateRevision = (await treeOf(alice, tree._id)).revision;

    const restored = await bob.post(`/api/trees/${tree._id}/restore`, { revision: earlyRevision });
    expect(restored.status).toBe(200);
    expect(restored.body.revision).toBe(lateRevision + 1);
    expect(await shape(alice, tree._id)).toEqual(early);
    const [last] = (await alice.get(`/api/trees/${tree._id}/history?limit=1`)).body;
    expect(last).toMatchObject({ kind: "restore.tree", userId: bob.user._id, revision: lateRevision + 1 });

    expect((await alice.post(`/api/trees/${tree._id}/restore`, { revision: lateRevision })).status).toBe(200);
    expect(await shape(alice, tree._id)).toEqual(late);
  });

  it("refuses a revision that does not exist (404) or is not a revision (400), changing nothing", async () => {
    const { alice, tree } = await sharedTree();
    const before = await treeOf(alice, tree._id);
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect((await alice.post(`/api/trees/${tree._id}/restore`, { revision: before.revision + 1 })).status).toBe(404);
    for (const revision of [0, -1, 1.5, "x", null]) {
      const res = await alice.post(`/api/trees/${tree._id}/restore`, { revision });
      expect(res.status, String(revision)).toBe(400);
    }
    expect((await alice.post(`/api/trees/${tree._id}/restore`, {})).status).toBe(400);
    expect(await treeOf(alice, tree._id)).toEqual(before);
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toEqual(cards);
  });
});

describe("the trash", () => {
  it("lists a deleted subtree once, and restores it whole at its old place", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const a = await buildCard(alice, tree._id, { parentId: root._id, content: "a", position: 1 });
    await buildCard(alice, tree._id, { parentId: a._id, content: "a.1" });
    const a2 = await buildCard(alice, tree._id, { parentId: a._id, content: "a.2", position: 2 });
    await buildCard(alice, tree._id, { parentId: root._id, content: "b", position: 2 });
    const before = await shape(alice, tree._id);
    await bob.delete(`/api/trees/${tree._id}/cards/${a._id}`);
    const trash = (await alice.get(`/api/trees/${tree._id}/trash`)).body;
    expect(trash).toHaveLength(1);
    expect(trash[0]).toMatchObject({ count: 3, userId: bob.user._id, card: { _id: a._id, content: "a" } });

    // Restoring a card deleted with its parent restores from the root of what was deleted.
    const restored = await alice.post(`/api/trees/${tree._id}/cards/${a2._id}/restore`);
    expect(restored.status).toBe(200);
    expect(restored.body.map((c: any) => c.content)).toEqual(["a", "a.1", "a.2"]);
    expect(await shape(alice, tree._id)).toEqual(before);
    expect((await alice.get(`/api/trees/${tree._id}/trash`)).body).toEqual([]);
    expect((await alice.post(`/api/trees/${tree._id}/cards/${a._id}/restore`)).status).toBe(404);
  });

  it("puts a subtree whose parent is gone last under the nearest live ancestor", async () => {
    const { alice, tree, root } = await sharedTree();
    const p = await buildCard(alice, tree._id, { parentId: root._id, content: "p", position: 1 });
    const c = await buildCard(alice, tree._id, { parentId: p._id, content: "c" });
    await buildCard(alice, tree._id, { parentId: root._id, content: "q", position: 4.5 });
    await alice.delete(`/api/trees/${tree._id}/cards/${c._id}`);
    await alice.delete(`/api/trees/${tree._id}/cards/${p._id}`);
    expect((await alice.get(`/api/trees/${tree._id}/trash`)).body.map((t: any) => t.card.content)).toEqual(["p", "c"]);
    const [back] = (await alice.post(`/api/trees/${tree._id}/cards/${c._id}/restore`)).body;
    expect(back).toMatchObject({ parentId: root._id, position: 5 });
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect(cards.map((x: any) => x.content)).toEqual(["# root", "q", "c"]);
  });

  it("answers the SPEC §3 rules: collaborators may, others 404, anonymous 401", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const other = await buildUser(server.url, "other");
    const card = await buildCard(alice, tree._id, { parentId: root._id, content: "gone" });
    await alice.delete(`/api/trees/${tree._id}/cards/${card._id}`);
    const path = `/api/trees/${tree._id}/cards/${card._id}/restore`;
    expect((await other.post(path)).status).toBe(404);
    expect((await other.get(`/api/trees/${tree._id}/trash`)).status).toBe(404);
    expect((await other.anonymous().post(path)).status).toBe(401);
    expect((await alice.get(`/api/trees/${tree._id}/trash`)).body).toHaveLength(1);
    expect((await bob.post(path)).status).toBe(200);
  });
});
