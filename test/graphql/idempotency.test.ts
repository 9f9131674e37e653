/**
 * Idempotency-Key on GraphQL mutation requests (SPEC §13): replayed with
 * `Idempotent-Replayed: true` and nothing run again; another request with the key is
 * `idempotency_key_reused`; a query's key is ignored; bad keys are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { newRecordId } from "../../src/shared/ids.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

const CREATE = `mutation Create($input: CreateCardInput!) { createCard(input: $input) { id content } }`;

async function graphql(api: Api, key: string | undefined, query: string, variables: Record<string, unknown> = {}) {
  const res = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: api.authHeader!, ...(key === undefined ? {} : { "Idempotency-Key": key }) },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
}

async function contents(api: Api, treeId: string): Promise<string[]> {
  return (await api.get(`/api/trees/${treeId}/cards`)).body.map((c: any) => c.content);
}

describe("GraphQL mutations with an Idempotency-Key", () => {
  it("a replay answers the same body with Idempotent-Replayed: true and makes no second card", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const input = { treeId: tree._id, position: 1, content: "graphql once" };
    const first = await graphql(alice, "gq-1", CREATE, { input });
    expect(first.body.errors).toBeUndefined();
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await graphql(alice, "gq-1", CREATE, { input });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
    expect((await contents(alice, tree._id)).filter((c) => c === "graphql once")).toHaveLength(1);
  });

  it("the key with other variables is idempotency_key_reused (422), and nothing runs", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    await graphql(alice, "gq-2", CREATE, { input: { treeId: tree._id, position: 1, content: "first" } });
    const other = await graphql(alice, "gq-2", CREATE, { input: { treeId: tree._id, position: 1, content: "second" } });
    expect(other.status).toBe(422);
    expect(other.body.errors.map((e: any) => e.extensions.code)).toEqual(["idempotency_key_reused"]);
    expect(await contents(alice, tree._id)).toEqual(["", "first"]);
  });

  it("an error the mutation answered is kept (conflict on a taken id), replayed as it was", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const id = newRecordId();
    await graphql(alice, undefined, CREATE, { input: { id, treeId: tree._id, position: 1, content: "taken" } });
    const input = { id, treeId: tree._id, position: 2, content: "again" };
    const first = await graphql(alice, "gq-3", CREATE, { input });
    expect(first.body.errors.map((e: any) => e.extensions.code)).toEqual(["conflict"]);
    const again = await graphql(alice, "gq-3", CREATE, { input });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
  });

  it("a query's key is ignored: each query runs and answers what is there now", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const query = `query($id: ID!) { tree(id: $id) { cards { content } } }`;
    const before = await graphql(alice, "gq-4", query, { id: tree._id });
    await graphql(alice, undefined, CREATE, { input: { treeId: tree._id, position: 1, content: "new" } });
    const after = await graphql(alice, "gq-4", query, { id: tree._id });
    expect(after.headers.get("idempotent-replayed")).toBeNull();
    expect(after.body.data.tree.cards).toHaveLength(before.body.data.tree.cards.length + 1);
  });

  it("a bad key is invalid_request (400), and the mutation does not run", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const res = await graphql(alice, "x".repeat(256), CREATE, { input: { treeId: tree._id, position: 1, content: "no" } });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ code: "invalid_request", details: [{ path: "Idempotency-Key" }] });
    expect(await contents(alice, tree._id)).toEqual([""]);
  });
});
