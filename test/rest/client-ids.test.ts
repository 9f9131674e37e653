/**
 * Client-chosen ids (SPEC §13): a card or a tree created with `_id` (REST) or `id`
 * (GraphQL) has that id; a bad id is 400 and a taken one 409, and neither creates anything.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { newRecordId } from "../../src/shared/ids.js";
import { Gql } from "../graphql/client.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

describe("client-chosen card ids", () => {
  it("a card created with _id has it, and reads back with it", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const _id = newRecordId();
    const res = await alice.post(`/api/trees/${tree._id}/cards`, { _id, treeId: tree._id, position: 1, content: "mine" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ _id, treeId: tree._id, content: "mine", __v: 0 });
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect(cards.find((c: any) => c._id === _id)?.content).toBe("mine");
  });

  it("a taken id is 409 conflict, in the same tree, in another tree, and when the card is in the trash", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const tree = await buildTree(alice);
    const bobs = await buildTree(bob);
    const _id = newRecordId();
    expect((await alice.post(`/api/trees/${tree._id}/cards`, { _id, treeId: tree._id, position: 1, content: "first" })).status).toBe(201);

    const again = await alice.post(`/api/trees/${tree._id}/cards`, { _id, treeId: tree._id, position: 2, content: "second" });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe("conflict");
    // Another user's tree: the id is taken all the same, and their card is not moved.
    const elsewhere = await bob.post(`/api/trees/${bobs._id}/cards`, { _id, treeId: bobs._id, position: 1, content: "bob's" });
    expect(elsewhere.status).toBe(409);
    expect((await bob.get(`/api/trees/${bobs._id}/cards`)).body.map((c: any) => c._id)).not.toContain(_id);

    expect((await alice.delete(`/api/trees/${tree._id}/cards/${_id}`)).status).toBe(200);
    const trashed = await alice.post(`/api/trees/${tree._id}/cards`, { _id, treeId: tree._id, position: 3, content: "third" });
    expect(trashed.status).toBe(409);
    const trash = (await alice.get(`/api/trees/${tree._id}/trash`)).body;
    expect(JSON.stringify(trash)).toContain("first");
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(1);
  });

  it("two creations of one id at once in two trees: one card, one 409", async () => {
    const alice = await buildUser(server.url);
    const [a, b] = [await buildTree(alice), await buildTree(alice)];
    const _id = newRecordId();
    const answers = await Promise.all(
      [a, b, a, b].map((tree) => alice.post(`/api/trees/${tree._id}/cards`, { _id, treeId: tree._id, position: 1, content: tree._id })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    const winner = answers.find((r) => r.status === 201)!.body;
    const inA = (await alice.get(`/api/trees/${a._id}/cards`)).body.filter((c: any) => c._id === _id);
    const inB = (await alice.get(`/api/trees/${b._id}/cards`)).body.filter((c: any) => c._id === _id);
    expect([...inA, ...inB]).toEqual([expect.objectContaining({ _id, treeId: winner.treeId, content: winner.treeId })]);
  });

  it("a bad id is 400 with details on _id, and creates nothing", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    for (const _id of ["short", "A".repeat(24), "a".repeat(25), "a".repeat(23) + "_", 12, null]) {
      const res = await alice.post(`/api/trees/${tree._id}/cards`, { _id, treeId: tree._id, position: 1 });
      expect(res.status, JSON.stringify(_id)).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.details.map((d: any) => d.path)).toEqual(["_id"]);
    }
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(1);
  });
});

describe("client-chosen tree ids", () => {
  it("a tree created with _id has it; a taken one is 409; a bad one 400", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const _id = newRecordId();
    const made = await alice.post("/api/trees", { _id, name: "chosen", seed: "# one\n\n# two" });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ _id, name: "chosen", owner: alice.user._id });
    expect((await alice.get(`/api/trees/${_id}/cards`)).body.map((c: any) => c.content)).toEqual(["# one", "# two"]);

    const taken = await bob.post("/api/trees", { _id, name: "mine now?" });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toBe("conflict");
    expect((await alice.get("/api/trees")).body.find((t: any) => t._id === _id)).toMatchObject({ name: "chosen", owner: alice.user._id });
    expect((await bob.get("/api/trees")).body).toEqual([]);

    const bad = await alice.post("/api/trees", { _id: "not-an-id", name: "bad" });
    expect(bad.status).toBe(400);
    expect(bad.body.details.map((d: any) => d.path)).toEqual(["_id"]);
    expect((await alice.get("/api/trees")).body).toHaveLength(1);
  });
});

describe("client-chosen ids in GraphQL", () => {
  it("createCard and createTree take `id`; taken is conflict, bad is invalid_request", async () => {
    const alice = await buildUser(server.url);
    const gql = Gql.as(alice);
    const treeId = newRecordId();
    const made = await gql.data(`mutation($input: CreateTreeInput!) { createTree(input: $input) { id name } }`, {
      input: { id: treeId, name: "by graphql" },
    });
    expect(made.createTree).toEqual({ id: treeId, name: "by graphql" });

    const cardId = newRecordId();
    const card = await gql.data(`mutation($input: CreateCardInput!) { createCard(input: $input) { id content } }`, {
      input: { id: cardId, treeId, position: 1, content: "chosen" },
    });
    expect(card.createCard).toEqual({ id: cardId, content: "chosen" });

    const createCard = `mutation($input: CreateCardInput!) { createCard(input: $input) { id } }`;
    expect(await gql.codes(createCard, { input: { id: cardId, treeId, position: 2 } })).toEqual(["conflict"]);
    const bad = await gql.reply(createCard, { input: { id: "nope", treeId, position: 2 } });
    expect(bad.errors.map((e) => e.extensions.code)).toEqual(["invalid_request"]);
    expect(JSON.stringify(bad.errors[0].extensions.details)).toContain("id");
    expect(await gql.codes(`mutation { createTree(input: { id: "${treeId}", name: "again" }) { id } }`)).toEqual(["conflict"]);
    expect((await alice.get(`/api/trees/${treeId}/cards`)).body.map((c: any) => c._id)).toContain(cardId);
    expect((await alice.get(`/api/trees/${treeId}/cards`)).body).toHaveLength(2);
  });
});
