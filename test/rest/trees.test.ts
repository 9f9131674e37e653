import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { SseReader } from "../live/sse-client.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

describe("POST /api/trees", () => {
  it("creates a tree with one empty first-column card", async () => {
    const alice = await buildUser(server.url);
    const res = await alice.post("/api/trees", { name: "  Novel  " });
    expect(res.status).toBe(201);
    const tree = res.body;
    expect(Object.keys(tree).sort()).toEqual(["__v", "_id", "createdAt", "name", "owner", "revision", "updatedAt", "users"]);
    expect(tree).toMatchObject({ __v: 0, name: "Novel", owner: alice.user._id, users: [alice.user._id] });
    expect(tree._id).toMatch(/^[a-z0-9]{24}$/);
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect(cards).toHaveLength(1);
    expect(cards[0]).toMatchObject({ treeId: tree._id, parentId: null, content: "" });
    expect(Object.keys(cards[0]).sort()).toEqual(["__v", "_id", "content", "createdAt", "parentId", "position", "treeId", "updatedAt"]);
  });

  it("refuses an empty or over-long name with 400, creating nothing", async () => {
    const alice = await buildUser(server.url);
    for (const name of ["", "   ", "x".repeat(201), 42]) {
      const res = await alice.post("/api/trees", { name });
      expect(res.status).toBe(400);
      expect(res.body.details[0].path).toBe("name");
    }
    expect((await alice.get("/api/trees")).body).toEqual([]);
  });
});

describe("GET /api/trees", () => {
  it("lists the trees the user can open, most recently updated first", async () => {
    const alice = await buildUser(server.url);
    const first = await buildTree(alice, { name: "first" });
    const second = await buildTree(alice, { name: "second" });
    expect((await alice.get("/api/trees")).body.map((t: any) => t.name)).toEqual(["second", "first"]);
    await buildCard(alice, first._id, { content: "touch" });
    const trees = (await alice.get("/api/trees")).body;
    expect(trees.map((t: any) => t._id)).toEqual([first._id, second._id]);
    expect(trees[0].__v).toBe(0);
  });
});

describe("PUT /api/trees/:treeId", () => {
  it("renames and sets latex, counting the revision", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const res = await alice.put(`/api/trees/${tree._id}`, { name: "Renamed", latex: true, _id: "ignored", owner: "x" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ _id: tree._id, name: "Renamed", latex: true, __v: 1, owner: alice.user._id });
    expect(res.body.updatedAt >= tree.updatedAt).toBe(true);
  });

  it("sets and clears publicUrl; a taken one is 409 and a bad one 400", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const tree = await buildTree(alice);
    const other = await buildTree(bob);
    const url = `pub-${tree._id.slice(0, 8)}`;
    const set = await alice.put(`/api/trees/${tree._id}`, { publicUrl: url });
    expect(set.status).toBe(200);
    expect(set.body.publicUrl).toBe(url);
    const taken = await bob.put(`/api/trees/${other._id}`, { publicUrl: url });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toBe("conflict");
    expect((await alice.put(`/api/trees/${tree._id}`, { publicUrl: "No Spaces" })).status).toBe(400);
    const cleared = await alice.put(`/api/trees/${tree._id}`, { publicUrl: null });
    expect(cleared.status).toBe(200);
    expect("publicUrl" in cleared.body).toBe(false);
    expect((await bob.put(`/api/trees/${other._id}`, { publicUrl: url })).status).toBe(200);
  });
});

describe("PUT /api/trees/:treeId that changes nothing", () => {
  it("`{}` or the values the tree has record no change, take no revision and send no live event", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "Same" });
    await alice.post(`/api/trees/${tree._id}/collaborators`, { email: bob.user.email });
    expect((await alice.put(`/api/trees/${tree._id}`, { latex: true, publicUrl: "same-tree" })).status).toBe(200);
    const before = (await alice.get(`/api/trees`)).body.find((t: any) => t._id === tree._id);
    const history = await alice.get(`/api/trees/${tree._id}/history`);
    expect(history.status).toBe(200);
    const events = await SseReader.open(server.url, `/api/trees/${tree._id}/events`, { authorization: alice.authHeader! });

    for (const [who, body] of [
      [alice, {}],
      [alice, { name: "Same" }],
      [alice, { name: "  Same  ", latex: true }],
      [alice, { publicUrl: "same-tree" }],
      [alice, { name: "Same", latex: true, publicUrl: "same-tree" }],
      [bob, {}],
      [bob, { name: "Same" }],
    ] as const) {
      const res = await who.put(`/api/trees/${tree._id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(res.body).toEqual(before);
    }
    expect((await alice.get(`/api/trees`)).body.find((t: any) => t._id === tree._id)).toEqual(before);
    expect((await alice.get(`/api/trees/${tree._id}/history`)).body).toEqual(history.body);

    // The next real change is the next revision, and the first event the stream sees.
    const renamed = await alice.put(`/api/trees/${tree._id}`, { name: "Different" });
    expect(renamed.body).toMatchObject({ name: "Different", revision: before.revision + 1, __v: before.__v + 1 });
    const [first] = await events.waitFor(1);
    expect(first).toMatchObject({ revision: before.revision + 1, kind: "tree.update", tree: { name: "Different" } });
    events.close();
  });

  it("still asks the policy: a collaborator repeating the public address is refused as before", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const tree = await buildTree(alice);
    await alice.post(`/api/trees/${tree._id}/collaborators`, { email: bob.user.email });
    await alice.put(`/api/trees/${tree._id}`, { publicUrl: "kept-by-owner" });
    expect((await bob.put(`/api/trees/${tree._id}`, { publicUrl: "kept-by-owner" })).status).toBe(403);
    expect((await (await buildUser(server.url)).put(`/api/trees/${tree._id}`, {})).status).toBe(404);
  });
});

describe("PUT /api/trees/:treeId validation", () => {
  it("publicUrl is 3 to 64 characters of a-z, 0-9 and -", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const stem = tree._id.slice(0, 10);
    for (const bad of ["ab", stem + "x".repeat(55), `${stem}_x`, `${stem}.x`, `UP-${stem}`, 42, ""]) {
      const res = await alice.put(`/api/trees/${tree._id}`, { publicUrl: bad });
      expect(res.status, String(bad)).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.details.map((d: any) => d.path)).toContain("publicUrl");
    }
    const unchanged = (await alice.get("/api/trees")).body[0];
    expect(unchanged.__v).toBe(0);
    expect("publicUrl" in unchanged).toBe(false);
    for (const good of [`a-${stem.slice(0, 1)}`, stem + "-".repeat(54)]) {
      const res = await alice.put(`/api/trees/${tree._id}`, { publicUrl: good });
      expect(res.status, good).toBe(200);
      expect(res.body.publicUrl).toBe(good);
    }
  });

  it("a bad name or a non-boolean latex is 400 with details, and the tree stays as it was", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "Kept" });
    const cases: [unknown, string][] = [
      [{ name: "" }, "name"],
      [{ name: "   " }, "name"],
      [{ name: "x".repeat(201) }, "name"],
      [{ name: 7 }, "name"],
      [{ latex: "yes" }, "latex"],
      [{ name: "Changed", latex: 1 }, "latex"],
    ];
    for (const [body, field] of cases) {
      const res = await alice.put(`/api/trees/${tree._id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.details.map((d: any) => d.path)).toContain(field);
    }
    expect((await alice.get("/api/trees")).body).toEqual([tree]);
    const longest = await alice.put(`/api/trees/${tree._id}`, { name: "y".repeat(200) });
    expect(longest.status).toBe(200);
    expect(longest.body.name).toBe("y".repeat(200));
  });
});

describe("DELETE /api/trees/:treeId", () => {
  it("deletes the tree and its cards", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { seed: "# a\n\n# b" });
    expect((await alice.delete(`/api/trees/${tree._id}`)).status).toBe(204);
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).status).toBe(404);
    expect((await alice.get("/api/index")).body).toMatchObject({ treesCount: 0, cardsCount: 0 });
  });
});

describe("clones and the public read", () => {
  it("clone copies the live cards with new ids, no collaborators, no publicUrl", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "Story" });
    const [root] = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    const child = await buildCard(alice, tree._id, { parentId: root._id, content: "child" });
    const gone = await buildCard(alice, tree._id, { parentId: root._id, content: "trashed", position: 5 });
    await alice.delete(`/api/trees/${tree._id}/cards/${gone._id}`);
    await alice.post(`/api/trees/${tree._id}/collaborators`, { email: bob.user.email });
    await alice.put(`/api/trees/${tree._id}`, { publicUrl: `story-${tree._id.slice(0, 6)}` });

    const res = await alice.post(`/api/trees/${tree._id}/clone`);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: "Story (copy)", owner: alice.user._id, users: [alice.user._id], __v: 0 });
    expect("publicUrl" in res.body).toBe(false);
    const copy = (await alice.get(`/api/trees/${res.body._id}/cards`)).body;
    expect(copy.map((c: any) => c.content)).toEqual(["", "child"]);
    expect(copy[1].parentId).toBe(copy[0]._id);
    expect(copy.map((c: any) => c._id)).not.toContain(child._id);
  });

  it("clonePublic works by id and by publicUrl for another user; a private tree is 404", async () => {
    const alice = await buildUser(server.url);
    const carol = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "Shared", seed: "# one\n\n## two" });
    expect((await carol.post(`/api/trees/${tree._id}/clonePublic`)).status).toBe(404);
    const url = `shared-${tree._id.slice(0, 6)}`;
    await alice.put(`/api/trees/${tree._id}`, { publicUrl: url });
    for (const key of [tree._id, url]) {
      const res = await carol.post(`/api/trees/${key}/clonePublic`);
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ name: "Shared (copy)", owner: carol.user._id });
      const cards = (await carol.get(`/api/trees/${res.body._id}/cards`)).body;
      expect(cards.map((c: any) => c.content)).toEqual(["# one", "## two"]);
    }
  });

  it("GET /api/public/:publicUrl needs no credentials and is 404 unless public", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "Open", seed: "# hello" });
    const url = `open-${tree._id.slice(0, 6)}`;
    const anon = new Api(server.url);
    expect((await anon.get(`/api/public/${url}`)).status).toBe(404);
    await alice.put(`/api/trees/${tree._id}`, { publicUrl: url });
    const res = await anon.get(`/api/public/${url}`);
    expect(res.status).toBe(200);
    expect(res.body.tree).toMatchObject({ _id: tree._id, name: "Open", publicUrl: url });
    expect(res.body.cards.map((c: any) => c.content)).toEqual(["# hello"]);
  });
});

describe("collaborators", () => {
  it("the owner adds and removes; a collaborator sees, writes and may leave", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const tree = await buildTree(alice);
    const added = await alice.post(`/api/trees/${tree._id}/collaborators`, { email: bob.user.email.toUpperCase() });
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ _id: bob.user._id, email: bob.user.email, owner: false });
    expect((await alice.post(`/api/trees/${tree._id}/collaborators`, { email: bob.user.email })).status).toBe(409);
    expect((await alice.post(`/api/trees/${tree._id}/collaborators`, { email: "nobody@example.test" })).status).toBe(404);

    const list = await bob.get(`/api/trees/${tree._id}/collaborators`);
    expect(list.body).toEqual([
      { _id: alice.user._id, email: alice.user.email, owner: true },
      { _id: bob.user._id, email: bob.user.email, owner: false },
    ]);
    expect((await bob.get("/api/trees")).body.map((t: any) => t._id)).toContain(tree._id);
    expect((await buildCard(bob, tree._id, { content: "from bob" })).content).toBe("from bob");
    expect((await bob.delete(`/api/trees/${tree._id}/collaborators/${alice.user._id}`)).status).toBe(403);

    expect((await bob.delete(`/api/trees/${tree._id}/collaborators/${bob.user._id}`)).status).toBe(204);
    expect((await bob.get(`/api/trees/${tree._id}/cards`)).status).toBe(404);
    expect((await alice.delete(`/api/trees/${tree._id}/collaborators/${bob.user._id}`)).status).toBe(404);
  });
});
