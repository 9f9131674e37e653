/**
 * Reverting one change (the browser's undo and redo) over REST: `POST
 * /api/trees/:id/changes/:revision/revert`, and the `X-Tree-Revision` every write answers.
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

const cardsOf = async (api: Api, treeId: string) => (await api.get(`/api/trees/${treeId}/cards`)).body as any[];
const treeOf = async (api: Api, treeId: string) => (await api.get("/api/trees")).body.find((t: any) => t._id === treeId);
/** The live cards in tree order, as a reader compares them: id, parent, position, text. */
const shape = async (api: Api, treeId: string) =>
  (await cardsOf(api, treeId)).map((c) => ({ _id: c._id, parentId: c.parentId, position: c.position, content: c.content }));
const revisionOf = (reply: { headers: Headers }) => Number(reply.headers.get("x-tree-revision"));
const revert = (api: Api, treeId: string, revision: number | string, body?: unknown) =>
  api.post(`/api/trees/${treeId}/changes/${revision}/revert`, body);

describe("X-Tree-Revision", () => {
  it("answers every write to a tree with the revision its change made", async () => {
    const { alice, tree, root } = await sharedTree();
    const created = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, parentId: root._id, content: "x" });
    expect(revisionOf(created)).toBe(3);
    const put = await alice.put(`/api/trees/${tree._id}/cards/${created.body._id}`, { content: "y" });
    expect(revisionOf(put)).toBe(4);
    // A body big enough to arrive in several reads still gets the header.
    const seed = Array.from({ length: 3000 }, (_, i) => `# heading ${i} ${"words ".repeat(10)}`).join("\n");
    const imported = await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: root._id, seed });
    expect(imported.status).toBe(201);
    expect(revisionOf(imported)).toBe(5);
    expect(revisionOf(await alice.delete(`/api/trees/${tree._id}/cards/${created.body._id}`))).toBe(6);
    expect(revisionOf(await alice.put(`/api/trees/${tree._id}`, { name: "renamed" }))).toBe(7);
    expect(revisionOf(await alice.post(`/api/trees/${tree._id}/cards/${created.body._id}/restore`))).toBe(8);
    expect(revisionOf(await alice.post(`/api/trees/${tree._id}/restore`, { revision: 4 }))).toBe(9);
    expect(revisionOf(await alice.post("/api/trees", { name: "another" }))).toBe(1);
    expect((await treeOf(alice, tree._id)).revision).toBe(9);
    // Reads and refused writes carry none.
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).headers.get("x-tree-revision")).toBeNull();
    const refused = await alice.put(`/api/trees/${tree._id}/cards/${root._id}`, { content: 5 });
    expect(refused.status).toBe(400);
    expect(refused.headers.get("x-tree-revision")).toBeNull();
  });
});

describe("X-Tree-Revision under concurrent writes", () => {
  it("names each request's own change, never a neighbour's", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const made = await Promise.all(Array.from({ length: 6 }, (_, i) => buildCard(i % 2 ? bob : alice, tree._id, { parentId: root._id, content: `c${i}` })));
    const writes = await Promise.all(made.map((card, i) => (i % 2 ? bob : alice).put(`/api/trees/${tree._id}/cards/${card._id}`, { content: `edited ${i}` })));
    const history = (await alice.get(`/api/trees/${tree._id}/history?limit=6`)).body as any[];
    const cardOf = new Map(history.map((entry) => [entry.revision, entry.cardIds[0]]));
    expect(new Set(writes.map(revisionOf)).size).toBe(6);
    writes.forEach((write, i) => expect(cardOf.get(revisionOf(write))).toBe(made[i]._id));
  });
});

describe("reverting a change", () => {
  it("an edit: the text back, as a new change of kind revert; the revert of that is a redo", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const card = await buildCard(alice, tree._id, { parentId: root._id, content: "first words" });
    const edit = await alice.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "second words" });
    const undo = await revert(alice, tree._id, revisionOf(edit));
    expect(undo.status).toBe(200);
    expect(undo.body.revision).toBe(revisionOf(edit) + 1);
    expect(revisionOf(undo)).toBe(undo.body.revision);
    expect(undo.body.change).toMatchObject({ kind: "revert", userId: alice.user._id, deleted: [], revision: undo.body.revision });
    expect(undo.body.change.cards).toEqual([expect.objectContaining({ _id: card._id, content: "first words", __v: 2 })]);
    expect((await cardsOf(bob, tree._id)).find((c) => c._id === card._id).content).toBe("first words");
    const [last] = (await bob.get(`/api/trees/${tree._id}/history?limit=1`)).body;
    expect(last).toMatchObject({ kind: "revert", revision: undo.body.revision, cardIds: [card._id] });

    const redo = await revert(alice, tree._id, undo.body.revision);
    expect(redo.status).toBe(200);
    expect((await cardsOf(bob, tree._id)).find((c) => c._id === card._id).content).toBe("second words");
  });

  it("a create: the card to the trash; a redo brings it back", async () => {
    const { alice, tree, root } = await sharedTree();
    const before = await shape(alice, tree._id);
    const created = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, parentId: root._id, content: "new" });
    const undo = await revert(alice, tree._id, revisionOf(created));
    expect(undo.body.change).toMatchObject({ cards: [], deleted: [created.body._id] });
    expect(await shape(alice, tree._id)).toEqual(before);
    expect((await alice.get(`/api/trees/${tree._id}/trash`)).body[0].card._id).toBe(created.body._id);
    await revert(alice, tree._id, undo.body.revision);
    expect((await shape(alice, tree._id)).map((c) => c.content)).toEqual(["# root", "new"]);
  });

  it("a delete: the subtree back exactly (ids, texts, parents, order)", async () => {
    const { alice, tree, root } = await sharedTree();
    const a = await buildCard(alice, tree._id, { parentId: root._id, content: "a", position: 1 });
    await buildCard(alice, tree._id, { parentId: a._id, content: "a.1", position: 1 });
    const a2 = await buildCard(alice, tree._id, { parentId: a._id, content: "a.2", position: 2 });
    await buildCard(alice, tree._id, { parentId: a2._id, content: "a.2.1" });
    await buildCard(alice, tree._id, { parentId: root._id, content: "b", position: 2 });
    const before = await shape(alice, tree._id);
    const deleted = await alice.delete(`/api/trees/${tree._id}/cards/${a._id}`);
    expect(deleted.body.deleted).toHaveLength(4);
    const undo = await revert(alice, tree._id, revisionOf(deleted));
    expect(undo.status).toBe(200);
    expect(undo.body.change.cards.map((c: any) => c.content).sort()).toEqual(["a", "a.1", "a.2", "a.2.1"]);
    expect(await shape(alice, tree._id)).toEqual(before);
    expect((await alice.get(`/api/trees/${tree._id}/trash`)).body).toEqual([]);
  });

  it("a move: parent and position back", async () => {
    const { alice, tree, root } = await sharedTree();
    const a = await buildCard(alice, tree._id, { parentId: root._id, content: "a", position: 1 });
    await buildCard(alice, tree._id, { parentId: root._id, content: "b", position: 2 });
    const before = await shape(alice, tree._id);
    const moved = await alice.put(`/api/trees/${tree._id}/cards/${a._id}`, { parentId: null, position: 5 });
    expect((await shape(alice, tree._id)).map((c) => c.content)).toEqual(["# root", "b", "a"]);
    expect((await revert(alice, tree._id, revisionOf(moved))).status).toBe(200);
    expect(await shape(alice, tree._id)).toEqual(before);
  });

  it("an import: every imported card to the trash", async () => {
    const { alice, tree, root } = await sharedTree();
    const before = await shape(alice, tree._id);
    const imported = await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: root._id, seed: "# one\n## one.one\n# two" });
    expect(imported.body).toHaveLength(3);
    const undo = await revert(alice, tree._id, revisionOf(imported));
    expect(undo.body.change.deleted.sort()).toEqual(imported.body.map((c: any) => c._id).sort());
    expect(await shape(alice, tree._id)).toEqual(before);
  });

  it("several changes together (one undo step): one revert, each card back to before the earliest", async () => {
    const { alice, tree, root } = await sharedTree();
    const before = await shape(alice, tree._id);
    const created = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, parentId: root._id, content: "" });
    const written = await alice.put(`/api/trees/${tree._id}/cards/${created.body._id}`, { content: "typed" });
    const edited = await alice.put(`/api/trees/${tree._id}/cards/${root._id}`, { content: "# root, edited" });
    // Alone, the create's revert meets the card's later edit (by the same step): 409.
    expect((await revert(alice, tree._id, revisionOf(created))).status).toBe(409);
    const undo = await revert(alice, tree._id, revisionOf(edited), { together: [revisionOf(created), revisionOf(written)] });
    expect(undo.status).toBe(200);
    expect(undo.body.revision).toBe(revisionOf(edited) + 1);
    expect(undo.body.change.deleted).toEqual([created.body._id]);
    expect(await shape(alice, tree._id)).toEqual(before);
    const redo = await revert(alice, tree._id, undo.body.revision);
    expect(redo.status).toBe(200);
    expect((await shape(alice, tree._id)).map((c) => c.content)).toEqual(["# root, edited", "typed"]);
    for (const together of [[0], ["x"], Array.from({ length: 101 }, (_, i) => i + 1)]) {
      expect((await revert(alice, tree._id, 3, { together })).status, JSON.stringify(together).slice(0, 20)).toBe(400);
    }
    // Revision 1 made the tree: it has no revert, as a revision past the tree has none.
    expect((await revert(alice, tree._id, 3, { together: [1] })).status).toBe(404);
    expect((await revert(alice, tree._id, 3, { together: [999] })).status).toBe(404);
  });

  it("a rename: the name back", async () => {
    const { alice, tree } = await sharedTree();
    const renamed = await alice.put(`/api/trees/${tree._id}`, { name: "renamed" });
    const undo = await revert(alice, tree._id, revisionOf(renamed));
    expect(undo.body.change.tree.name).toBe("shared");
    expect((await treeOf(alice, tree._id)).name).toBe("shared");
  });

  it("a card deleted again with its parent since comes back under the nearest live ancestor", async () => {
    const { alice, tree, root } = await sharedTree();
    const p = await buildCard(alice, tree._id, { parentId: root._id, content: "p" });
    const c = await buildCard(alice, tree._id, { parentId: p._id, content: "c" });
    const deleted = await alice.delete(`/api/trees/${tree._id}/cards/${c._id}`);
    await alice.delete(`/api/trees/${tree._id}/cards/${p._id}`);
    expect((await revert(alice, tree._id, revisionOf(deleted))).status).toBe(200);
    const back = (await cardsOf(alice, tree._id)).find((x) => x._id === c._id);
    expect(back.parentId).toBe(root._id);
  });
});

describe("a revert over a collaborator's later work", () => {
  it("answers 409 listing the cards changed since, changing nothing; force reverts them", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const card = await buildCard(alice, tree._id, { parentId: root._id, content: "alice 1" });
    const edit = await alice.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "alice 2" });
    await bob.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "bob's words" });
    const before = await shape(alice, tree._id);
    const treeBefore = await treeOf(alice, tree._id);
    const refused = await revert(alice, tree._id, revisionOf(edit));
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe("conflict");
    expect(refused.body.details.changed).toEqual([{ card: expect.objectContaining({ _id: card._id, content: "bob's words" }), deleted: false }]);
    expect(refused.headers.get("x-tree-revision")).toBeNull();
    expect(await shape(alice, tree._id)).toEqual(before);
    expect(await treeOf(alice, tree._id)).toEqual(treeBefore);

    expect((await revert(alice, tree._id, revisionOf(edit), { force: false })).status).toBe(409);
    const forced = await revert(alice, tree._id, revisionOf(edit), { force: true });
    expect(forced.status).toBe(200);
    expect((await cardsOf(alice, tree._id)).find((c) => c._id === card._id).content).toBe("alice 1");
  });

  it("counts a card added since under a created card as changed: force trashes it with its parent", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const created = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, parentId: root._id, content: "mine" });
    const child = await buildCard(bob, tree._id, { parentId: created.body._id, content: "bob's child" });
    const grandchild = await buildCard(bob, tree._id, { parentId: child._id, content: "bob's grandchild" });
    const refused = await revert(alice, tree._id, revisionOf(created));
    expect(refused.status).toBe(409);
    expect(refused.body.details.changed.map((c: any) => c.card._id)).toEqual([child._id, grandchild._id]);
    const forced = await revert(alice, tree._id, revisionOf(created), { force: true });
    expect(forced.body.change.deleted.sort()).toEqual([created.body._id, child._id, grandchild._id].sort());
    // Gone together, they come back together from the trash.
    expect((await alice.get(`/api/trees/${tree._id}/trash`)).body).toEqual([expect.objectContaining({ count: 3 })]);
    expect((await shape(alice, tree._id)).map((c) => c.content)).toEqual(["# root"]);
  });

  it("writes nothing when the tree already is as the revert would leave it", async () => {
    const { alice, tree, root } = await sharedTree();
    const card = await buildCard(alice, tree._id, { parentId: root._id, content: "one" });
    const edit = await alice.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "two" });
    await alice.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "one" });
    const { revision } = await treeOf(alice, tree._id);
    const res = await revert(alice, tree._id, revisionOf(edit), { force: true });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ revision, change: null });
    expect((await treeOf(alice, tree._id)).revision).toBe(revision);
  });
});

describe("bad input", () => {
  it("404 for a revision the tree never had, 400 for garbage and for changes of access; nothing changes", async () => {
    const { alice, tree, root } = await sharedTree();
    await buildCard(alice, tree._id, { parentId: root._id, content: "x" });
    const before = await shape(alice, tree._id);
    const treeBefore = await treeOf(alice, tree._id);
    const missing = await revert(alice, tree._id, treeBefore.revision + 1);
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe("not_found");
    expect((await revert(alice, tree._id, 999999)).status).toBe(404);
    for (const revision of ["0", "-1", "1.5", "x", "1e3"]) {
      const res = await revert(alice, tree._id, revision);
      expect(res.status, revision).toBe(400);
      expect(res.body.error).toBe("invalid_request");
    }
    for (const body of [{ force: "yes" }, { force: 1 }, [true]]) {
      const res = await revert(alice, tree._id, 3, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    // Revision 1 made the tree, 2 shared it: access, not content. No revert of them exists.
    for (const revision of [1, 2]) {
      const res = await revert(alice, tree._id, revision);
      expect(res.status).toBe(404);
      expect(res.body.message).toMatch(/cannot be reverted/);
    }
    expect((await revert(alice, "nope", 3)).status).toBe(400);
    expect((await revert(alice, "a".repeat(24), 3)).status).toBe(404);
    expect(await shape(alice, tree._id)).toEqual(before);
    expect(await treeOf(alice, tree._id)).toEqual(treeBefore);
  });

  it("keeps a private tree 404 to others and asks anonymous callers to sign in", async () => {
    const { alice, tree, root } = await sharedTree();
    const created = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, parentId: root._id, content: "secret" });
    const other = await buildUser(server.url, "other");
    const res = await revert(other, tree._id, revisionOf(created));
    expect(res.status).toBe(404);
    expect(res.text).not.toMatch(/secret/);
    expect((await revert(other.anonymous(), tree._id, revisionOf(created))).status).toBe(401);
    expect((await cardsOf(alice, tree._id)).map((c) => c.content)).toEqual(["# root", "secret"]);
  });
});
