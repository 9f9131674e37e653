/**
 * The cached cards read (src/rest/cards-json-cache.ts): every write shows on the very next
 * read, conditional requests get 304 only while nothing changed, and a warm cache never
 * answers someone who may not read the tree.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

async function warmTree() {
  const alice = await buildUser(server.url, "alice");
  const tree = await buildTree(alice, { seed: "# One\n\n# Two" });
  const path = `/api/trees/${tree._id}/cards`;
  const first = await alice.get(path);
  expect(first.status).toBe(200);
  return { alice, tree, path, cards: first.body as any[], etag: first.headers.get("etag")! };
}

const contents = (cards: any[]) => cards.map((c) => c.content);

describe("cached cards read", () => {
  it("shows each kind of write on the next read", async () => {
    const { alice, tree, path, cards } = await warmTree();
    const added = await buildCard(alice, tree._id, { parentId: cards[0]._id, content: "added" });
    expect(contents((await alice.get(path)).body)).toEqual(["# One", "added", "# Two"]);

    await alice.put(`${path}/${added._id}`, { content: "edited" });
    expect(contents((await alice.get(path)).body)).toEqual(["# One", "edited", "# Two"]);

    await alice.put(`${path}/${added._id}`, { parentId: cards[1]._id });
    expect(contents((await alice.get(path)).body)).toEqual(["# One", "# Two", "edited"]);

    await alice.post(`${path}/seed`, { parentId: null, seed: "# Three" });
    expect(contents((await alice.get(path)).body)).toEqual(["# One", "# Two", "edited", "# Three"]);

    await alice.delete(`${path}/${cards[1]._id}`);
    expect(contents((await alice.get(path)).body)).toEqual(["# One", "# Three"]);
  });

  it("says how many cards the list holds (X-Card-Count), after each write too", async () => {
    const { alice, tree, path, cards } = await warmTree();
    const first = await alice.get(path);
    expect(first.headers.get("x-card-count")).toBe(String(cards.length));
    await buildCard(alice, tree._id, { parentId: cards[0]._id, content: "added" });
    const after = await alice.get(path);
    expect(after.body).toHaveLength(3);
    expect(after.headers.get("x-card-count")).toBe("3");
    await alice.delete(`${path}/${cards[0]._id}`);
    expect((await alice.get(path)).headers.get("x-card-count")).toBe("1");
  });

  it("says which revision of the tree the list is (X-Cards-Revision), the tree list's revision for the same state", async () => {
    const { alice, tree, path, cards } = await warmTree();
    const revisionOf = async () => (await alice.get("/api/trees")).body.find((t: { _id: string }) => t._id === tree._id).revision as number;
    const first = await alice.get(path);
    const before = await revisionOf();
    expect(Number(first.headers.get("x-cards-revision"))).toBe(before);
    const written = await alice.post(path, { treeId: tree._id, parentId: cards[0]._id, position: 5, content: "added" });
    const after = await alice.get(path);
    expect(Number(after.headers.get("x-cards-revision"))).toBe(Number(written.headers.get("x-tree-revision")));
    expect(Number(after.headers.get("x-cards-revision"))).toBe(await revisionOf());
    expect(await revisionOf()).toBeGreaterThan(before);
    // Not X-Tree-Revision, which the page takes as a write of its own.
    expect(after.headers.get("x-tree-revision")).toBeNull();
  });

  it("sees every one of many writes made within the same millisecond", async () => {
    const { alice, tree, path } = await warmTree();
    const made = await Promise.all(
      Array.from({ length: 8 }, (_, i) => buildCard(alice, tree._id, { content: `fast ${i}`, position: 10 + i })),
    );
    const after = (await alice.get(path)).body as any[];
    expect(after.map((c) => c._id)).toEqual(expect.arrayContaining(made.map((c) => c._id)));
    expect(after).toHaveLength(10);
  });

  it("GET /api/cards joins the cached trees and shows a write to any of them", async () => {
    const { alice, tree } = await warmTree();
    const other = await buildTree(alice, { seed: "# Elsewhere" });
    const first = await alice.get("/api/cards");
    expect(contents(first.body)).toEqual(expect.arrayContaining(["# One", "# Two", "# Elsewhere"]));
    expect(first.body).toHaveLength(3);
    const etag = first.headers.get("etag")!;
    expect((await alice.get("/api/cards", { "if-none-match": etag })).status).toBe(304);

    await buildCard(alice, other._id, { content: "more" });
    const second = await alice.get("/api/cards", { "if-none-match": etag });
    expect(second.status).toBe(200);
    expect(second.body).toHaveLength(4);
    expect(second.body.filter((c: any) => c.treeId === tree._id)).toHaveLength(2);
  });

  it("answers 304 to a matching If-None-Match until the tree changes", async () => {
    const { alice, tree, path, etag } = await warmTree();
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await alice.get(path, { "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(again.text).toBe("");
    expect((await alice.get(path, { "if-none-match": `"other", ${etag}` })).status).toBe(304);

    await buildCard(alice, tree._id, { content: "new" });
    const changed = await alice.get(path, { "if-none-match": etag });
    expect(changed.status).toBe(200);
    expect(contents(changed.body)).toContain("new");
    expect(changed.headers.get("etag")).not.toBe(etag);
    expect(changed.headers.get("cache-control")).toBe("private, no-cache");
  });

  it("keeps the ETag across a restart when nothing changed", async () => {
    const { alice, path, etag } = await warmTree();
    server = await server.restart();
    // The restarted server listens on a new port.
    const again = new Api(server.url, alice.credentials);
    expect((await again.get(path, { "if-none-match": etag })).status).toBe(304);
  });

  it("never answers a stranger or an anonymous caller from a warm cache", async () => {
    const { path, etag } = await warmTree();
    const mallory = await buildUser(server.url, "mallory");
    const variants: Record<string, string>[] = [{}, { "if-none-match": etag }];
    for (const headers of variants) {
      const res = await mallory.get(path, headers);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe("not_found");
      expect((await mallory.anonymous().get(path, headers)).status).toBe(401);
    }
  });

  it("stops answering a collaborator once removed", async () => {
    const { alice, tree, path } = await warmTree();
    const bob = await buildUser(server.url, "bob");
    await alice.post(`/api/trees/${tree._id}/collaborators`, { email: bob.credentials!.email });
    expect((await bob.get(path)).status).toBe(200);
    await alice.delete(`/api/trees/${tree._id}/collaborators/${bob.user._id}`);
    expect((await bob.get(path)).status).toBe(404);
  });

  it("serves the public read from the same cache, current and only while public", async () => {
    const { alice, tree } = await warmTree();
    const slug = `cache-${tree._id.slice(0, 8)}`;
    await alice.put(`/api/trees/${tree._id}`, { publicUrl: slug });
    const anonymous = alice.anonymous();
    const first = await anonymous.get(`/api/public/${slug}`);
    expect(first.status).toBe(200);
    expect(first.body.tree.publicUrl).toBe(slug);
    expect(contents(first.body.cards)).toEqual(["# One", "# Two"]);
    expect((await anonymous.get(`/api/public/${slug}`, { "if-none-match": first.headers.get("etag")! })).status).toBe(304);

    await buildCard(alice, tree._id, { content: "later" });
    const second = await anonymous.get(`/api/public/${slug}`, { "if-none-match": first.headers.get("etag")! });
    expect(second.status).toBe(200);
    expect(contents(second.body.cards)).toContain("later");

    await alice.put(`/api/trees/${tree._id}`, { name: "Renamed" });
    expect((await anonymous.get(`/api/public/${slug}`)).body.tree.name).toBe("Renamed");

    await alice.put(`/api/trees/${tree._id}`, { publicUrl: null });
    expect((await anonymous.get(`/api/public/${slug}`)).status).toBe(404);
  });
});
