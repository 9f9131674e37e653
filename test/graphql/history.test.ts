/**
 * SPEC §10 over GraphQL: `version` on updateCard and deleteCard, `Tree.history`,
 * `Card.versions`, `Tree.trash`, `restoreTree` and `restoreCard`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

const UPDATE = `mutation($treeId: ID!, $id: ID!, $content: String!, $version: Int) {
  updateCard(treeId: $treeId, id: $id, input: { content: $content }, version: $version) { content version }
}`;

describe("GraphQL history", () => {
  it("a stale version is conflict with the current card, and changes nothing", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { seed: "# root" });
    const [root] = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    const gql = Gql.as(alice);
    expect(await gql.data(UPDATE, { treeId: tree._id, id: root._id, content: "first", version: 0 })).toEqual({
      updateCard: { content: "first", version: 1 },
    });
    const stale = await gql.reply(UPDATE, { treeId: tree._id, id: root._id, content: "lost?", version: 0 });
    expect(stale.errors[0].extensions.code).toBe("conflict");
    expect((stale.errors[0].extensions.details as any).current).toMatchObject({ content: "first", __v: 1 });
    const del = await gql.reply("mutation($t: ID!, $id: ID!) { deleteCard(treeId: $t, id: $id, version: 7) { deleted } }", { t: tree._id, id: root._id });
    expect(del.errors[0].extensions.code).toBe("conflict");
    const negative = await gql.reply(UPDATE, { treeId: tree._id, id: root._id, content: "x", version: -1 });
    expect(negative.errors[0].extensions.code).toBe("invalid_request");
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body[0]).toMatchObject({ content: "first", __v: 1 });
  });

  it("reads history, versions and trash, and restores a card and the tree", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { seed: "# root" });
    const [root] = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    const card = await buildCard(alice, tree._id, { parentId: root._id, content: "v0" });
    await alice.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "v1" });
    await alice.delete(`/api/trees/${tree._id}/cards/${card._id}`);
    const gql = Gql.as(alice);
    const read = await gql.data(
      `query($id: ID!) { tree(id: $id) {
        revision
        history(limit: 3) { revision kind userId cardIds }
        trash { count userId card { id content versions { version content } } }
      } }`,
      { id: tree._id },
    );
    expect(read.tree.revision).toBe(4);
    expect(read.tree.history.map((c: any) => c.kind)).toEqual(["CARD_DELETE", "CARD_UPDATE", "CARD_CREATE"]);
    expect(read.tree.history[0]).toMatchObject({ revision: 4, userId: alice.user._id, cardIds: [card._id] });
    expect(read.tree.trash).toEqual([
      {
        count: 1,
        userId: alice.user._id,
        card: { id: card._id, content: "v1", versions: [{ version: 2, content: "v1" }, { version: 1, content: "v1" }, { version: 0, content: "v0" }] },
      },
    ]);
    const restored = await gql.data("mutation($t: ID!, $id: ID!) { restoreCard(treeId: $t, id: $id) { id content version } }", {
      t: tree._id,
      id: card._id,
    });
    expect(restored.restoreCard).toEqual([{ id: card._id, content: "v1", version: 3 }]);
    const back = await gql.data("mutation($id: ID!) { restoreTree(id: $id, revision: 1) { revision cards { content } } }", { id: tree._id });
    expect(back.restoreTree).toEqual({ revision: 6, cards: [{ content: "# root" }] });
    const missing = await gql.reply("mutation($id: ID!) { restoreTree(id: $id, revision: 99) { revision } }", { id: tree._id });
    expect(missing.errors[0].extensions.code).toBe("not_found");
  });
});
