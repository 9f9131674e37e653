import { describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { startTestServer } from "../helpers/server.js";

describe("restart", { timeout: 120_000 }, () => {
  it("keeps users, trees, cards, trash, sharing and sessions across a restart", async () => {
    let server = await startTestServer({ env: { LOG: "off" } });
    try {
      const alice = await buildUser(server.url);
      const bob = await buildUser(server.url);
      const tree = await buildTree(alice, { name: "Durable", seed: "# one\n\n## two" });
      const card = await buildCard(alice, tree._id, { content: "kept", position: 9 });
      const gone = await buildCard(alice, tree._id, { content: "trashed", position: 10 });
      await alice.delete(`/api/trees/${tree._id}/cards/${gone._id}`);
      await alice.post(`/api/trees/${tree._id}/collaborators`, { email: bob.user.email });
      await alice.put(`/api/trees/${tree._id}`, { name: "Durable!", publicUrl: `durable-${tree._id.slice(0, 5)}` });
      const login = await new Api(server.url).post("/api/login", alice.credentials);
      const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
      const before = (await alice.get(`/api/trees/${tree._id}/cards`)).body;

      server = await server.restart();
      const aliceAgain = new Api(server.url, alice.credentials);
      expect((await aliceAgain.get(`/api/trees/${tree._id}/cards`)).body).toEqual(before);
      expect(before.map((c: any) => c.content)).toEqual(["# one", "## two", "kept"]);
      expect(before.map((c: any) => c._id)).toContain(card._id);
      const trees = (await new Api(server.url, bob.credentials).get("/api/trees")).body;
      expect(trees).toHaveLength(1);
      expect(trees[0]).toMatchObject({ name: "Durable!", __v: 2, users: [alice.user._id, bob.user._id] });
      const session = await new Api(server.url).get("/api/index", { cookie });
      expect(session.status).toBe(200);
      expect(session.body.csrf).toBe(login.body.csrf);
    } finally {
      await server.stop();
    }
  });

  it("keeps a tree made again with the id of one deleted before, and its cards, across a restart and a second one", async () => {
    let server = await startTestServer({ env: { LOG: "off" } });
    try {
      const alice = await buildUser(server.url);
      const _id = `again${Date.now().toString(36)}`.padEnd(24, "0").slice(0, 24);
      expect((await alice.post("/api/trees", { _id, name: "First" })).status).toBe(201);
      expect((await alice.delete(`/api/trees/${_id}`)).status).toBe(204);
      expect((await alice.post("/api/trees", { _id, name: "Second" })).status).toBe(201);
      await buildCard(alice, _id, { content: "precious", position: 1 });
      for (let restart = 0; restart < 2; restart++) {
        server = await server.restart();
        const again = new Api(server.url, alice.credentials);
        expect((await again.get("/api/trees")).body.map((t: any) => `${t._id} ${t.name}`)).toEqual([`${_id} Second`]);
        expect((await again.get(`/api/trees/${_id}/cards`)).body.map((c: any) => c.content)).toContain("precious");
      }
    } finally {
      await server.stop();
    }
  });
});
