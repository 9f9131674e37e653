/**
 * `revertChange` over GraphQL (undo and redo as changes), and `extensions.revisions`, by
 * which a mutation's caller learns the revisions of its own changes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildSharedTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer({ SIGNUP_LIMIT_PER_ADDRESS: "-1", SIGNUP_LIMIT_TOTAL: "-1" });
});
afterAll(() => server.stop());

const REVERT = `mutation($t: ID!, $r: Int!, $force: Boolean) {
  revertChange(treeId: $t, revision: $r, force: $force) { revision change { revision kind userId deleted cards { id content } } }
}`;

/** The whole JSON answer, extensions included. */
async function raw(api: Api, query: string, variables: Record<string, unknown>) {
  const res = await fetch(`${api.baseUrl}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: api.authHeader! },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as { data: any; errors?: any[]; extensions?: any };
}

const sharedTree = () => buildSharedTree(server.url);

const contentOf = async (api: Api, treeId: string, cardId: string) =>
  (await api.get(`/api/trees/${treeId}/cards`)).body.find((c: any) => c._id === cardId)?.content;

describe("revertChange", () => {
  it("a mutation's answer names its change's revision; reverting it undoes, reverting that redoes", async () => {
    const { alice, tree, root } = await sharedTree();
    const card = await buildCard(alice, tree._id, { parentId: root._id, content: "before" });
    const edit = await raw(alice, `mutation($t: ID!, $id: ID!) { updateCard(treeId: $t, id: $id, input: { content: "after" }) { content } }`, {
      t: tree._id,
      id: card._id,
    });
    expect(edit.extensions.revisions).toEqual([{ treeId: tree._id, revision: 4, kind: "card.update" }]);
    const reads = await raw(alice, `query($id: ID!) { tree(id: $id) { revision } }`, { id: tree._id });
    expect(reads.extensions?.revisions).toBeUndefined();

    const gql = Gql.as(alice);
    const undo = await gql.data(REVERT, { t: tree._id, r: 4 });
    expect(undo.revertChange).toEqual({
      revision: 5,
      change: { revision: 5, kind: "revert", userId: alice.user._id, deleted: [], cards: [{ id: card._id, content: "before" }] },
    });
    expect(await contentOf(alice, tree._id, card._id)).toBe("before");
    await gql.data(REVERT, { t: tree._id, r: 5 });
    expect(await contentOf(alice, tree._id, card._id)).toBe("after");
  });

  it("conflict over a collaborator's later edit (details.changed), force overrides; bad input changes nothing", async () => {
    const { alice, bob, tree, root } = await sharedTree();
    const card = await buildCard(alice, tree._id, { parentId: root._id, content: "alice" });
    await buildCard(alice, tree._id, { parentId: root._id, content: "second" });
    await bob.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "bob" });
    const gql = Gql.as(alice);
    const refused = await gql.reply(REVERT, { t: tree._id, r: 3 });
    expect(refused.errors[0].extensions.code).toBe("conflict");
    expect((refused.errors[0].extensions.details as any).changed[0].card).toMatchObject({ _id: card._id, content: "bob" });
    expect(await contentOf(alice, tree._id, card._id)).toBe("bob");

    expect(await gql.codes(REVERT, { t: tree._id, r: 99 })).toEqual(["not_found"]);
    expect(await gql.codes(REVERT, { t: tree._id, r: 0 })).toEqual(["invalid_request"]);
    expect(await gql.codes(REVERT, { t: tree._id, r: 2 })).toEqual(["not_found"]);
    expect(await gql.codes(REVERT, { t: "nope", r: 3 })).toEqual(["invalid_request"]);
    const other = Gql.as(await buildUser(server.url, "other"));
    expect(await other.codes(REVERT, { t: tree._id, r: 3 })).toEqual(["not_found"]);
    expect(await new Gql(server.url).codes(REVERT, { t: tree._id, r: 3 })).toEqual(["unauthenticated"]);
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body.map((c: any) => c.content)).toEqual(["# root", "bob", "second"]);

    const forced = await gql.data(REVERT, { t: tree._id, r: 3, force: true });
    expect(forced.revertChange.change.deleted).toEqual([card._id]);
    expect(await contentOf(alice, tree._id, card._id)).toBeUndefined();
  });
});
