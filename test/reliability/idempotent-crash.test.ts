/**
 * Exactly once across a crash (issue 26, SPEC §13): a keyed write whose change committed,
 * in a process killed (SIGKILL) before its answer was kept, is not run again by the retry
 * after the restart. The retry gets the answer the change gave (status, body,
 * X-Tree-Revision) with `Idempotent-Replayed: true`, and the tree holds that one change.
 *
 * The kill lands between the commit and the kept answer every time: the control file
 * (CARDTREE_FAULTS_FILE reading `hold-answer`, src/store/write-faults.ts) makes the server
 * hold the next keyed answer for ever just before keeping it, and say so in its log; the
 * test kills it then. Runs on the embedded store and (project "postgres") on PostgreSQL,
 * where the dead claim's lease is ended by hand instead of waiting its 30 s out.
 */
import { readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { adminQuery, TEST_STORE } from "../helpers/postgres.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

const HELD = "fault: holding an answer before keeping it";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.kill();
  server = undefined;
});

function controlFile(): string {
  return path.join(os.tmpdir(), `cardtree-hold-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
}

/**
 * Sends `send` with the hold armed, waits until the server holds its answer (the change is
 * committed), kills the server, and starts it again on the same data. The answer is lost.
 */
async function crashBeforeTheAnswerIsKept(control: string, send: () => Promise<unknown>): Promise<TestServer> {
  await writeFile(control, "hold-answer");
  const lost = send().then(
    () => "answered",
    () => "lost",
  );
  await vi.waitFor(() => expect(server!.output.some((line) => line.includes(HELD))).toBe(true), { timeout: 20_000, interval: 20 });
  await server!.kill();
  expect(await lost).toBe("lost");
  const restarted = await startTestServer({ dataDir: server!.dataDir, env: { CARDTREE_FAULTS_FILE: control } });
  if (TEST_STORE === "postgres") {
    // The claim's lease (30 s) would end on its own; the test ends it rather than wait.
    const url = await readFile(path.join(server!.dataDir, "test-database-url"), "utf8");
    await adminQuery("UPDATE idempotency_keys SET lease_until = '1970-01-01T00:00:00.000Z' WHERE claim IS NOT NULL", url);
  }
  return restarted;
}

async function start(control: string): Promise<TestServer> {
  server = await startTestServer({ env: { CARDTREE_FAULTS_FILE: control } });
  return server;
}

async function historyOf(api: Api, treeId: string): Promise<any[]> {
  const reply = await api.get(`/api/trees/${treeId}/history?limit=100`);
  expect(reply.status).toBe(200);
  return reply.body;
}

async function revisionOf(api: Api, treeId: string): Promise<number> {
  return (await api.get(`/api/trees`)).body.find((t: any) => t._id === treeId).revision;
}

describe("a keyed write killed between its commit and its kept answer", { timeout: 90_000 }, () => {
  it("a card creation (no client id) is answered from its change: one card, its 201, replayed", async () => {
    const control = controlFile();
    await start(control);
    const alice = await buildUser(server!.url);
    const tree = await buildTree(alice);
    const body = { treeId: tree._id, position: 7, content: "made once" };
    const key = { "Idempotency-Key": "crash-create-1" };

    server = await crashBeforeTheAnswerIsKept(control, () => alice.post(`/api/trees/${tree._id}/cards`, body, key));
    const api = new Api(server.url, alice.credentials);
    const made = (await api.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === "made once");
    expect(made).toHaveLength(1);
    const revision = await revisionOf(api, tree._id);

    const retry = await api.post(`/api/trees/${tree._id}/cards`, body, key);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.body).toEqual(made[0]);
    expect(retry.headers.get("x-tree-revision")).toBe(String(revision));
    expect((await api.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === "made once")).toHaveLength(1);
    expect(await revisionOf(api, tree._id)).toBe(revision);

    // The rebuilt answer is kept: the next retry is an ordinary replay of the same bytes.
    const again = await api.post(`/api/trees/${tree._id}/cards`, body, key);
    expect([again.status, again.headers.get("idempotent-replayed"), again.text]).toEqual([201, "true", retry.text]);
  });

  it("a script created without a client id is made once: the retry finds it under the id the key gives it", async () => {
    const control = controlFile();
    await start(control);
    const alice = await buildUser(server!.url);
    const body = { name: "made once", body: "console.log(1)" };
    const key = { "Idempotency-Key": "crash-script-1" };

    server = await crashBeforeTheAnswerIsKept(control, () => alice.post("/api/scripts", body, key));
    const api = new Api(server.url, alice.credentials);
    const kept = (await api.get("/api/scripts")).body.filter((s: any) => s.name === "made once");
    expect(kept).toHaveLength(1);

    const retry = await api.post("/api/scripts", body, key);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(kept[0]);
    expect((await api.get("/api/scripts")).body.filter((s: any) => s.name === "made once")).toHaveLength(1);
    // The same key on another user makes that user's own script.
    const bob = await buildUser(server.url);
    const bobs = await bob.post("/api/scripts", body, key);
    expect(bobs.status).toBe(201);
    expect(bobs.body._id).not.toBe(kept[0]._id);
  });

  it("a move without If-Match answers the card as the move left it, not as it is now, and is not applied again", async () => {
    const control = controlFile();
    await start(control);
    const alice = await buildUser(server!.url);
    const tree = await buildTree(alice);
    const card = (await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: "to move" })).body;
    const key = { "Idempotency-Key": "crash-move-1" };

    server = await crashBeforeTheAnswerIsKept(control, () => alice.put(`/api/trees/${tree._id}/cards/${card._id}`, { position: 9 }, key));
    const api = new Api(server.url, alice.credentials);
    const moved = (await api.get(`/api/trees/${tree._id}/cards`)).body.find((c: any) => c._id === card._id);
    expect(moved).toMatchObject({ position: 9, content: "to move", __v: card.__v + 1 });
    const movedAt = await revisionOf(api, tree._id);
    // Someone edits the card after the restart, before the retry.
    const edited = await api.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "edited since" });
    expect(edited.status).toBe(200);

    const retry = await api.put(`/api/trees/${tree._id}/cards/${card._id}`, { position: 9 }, key);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.body).toEqual(moved);
    expect(retry.headers.get("x-tree-revision")).toBe(String(movedAt));
    const history = await historyOf(api, tree._id);
    expect(history.filter((entry: any) => entry.kind === "card.move")).toHaveLength(1);
    expect(await revisionOf(api, tree._id)).toBe(movedAt + 1);
  });

  it("a GraphQL mutation is answered from its change: one card, the same data and revisions", async () => {
    const control = controlFile();
    await start(control);
    const alice = await buildUser(server!.url);
    const tree = await buildTree(alice);
    const query = `mutation Create($input: CreateCardInput!) { createCard(input: $input) { id content position } }`;
    const send = (url: string) =>
      fetch(`${url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: alice.authHeader!, "Idempotency-Key": "crash-graphql-1" },
        body: JSON.stringify({ query, variables: { input: { treeId: tree._id, position: 3, content: "graphql once" } } }),
      });

    server = await crashBeforeTheAnswerIsKept(control, () => send(server!.url).then((res) => res.text()));
    const api = new Api(server.url, alice.credentials);
    const made = (await api.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === "graphql once");
    expect(made).toHaveLength(1);
    const revision = await revisionOf(api, tree._id);

    const retry = await send(server.url);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const answer = await retry.json();
    expect(answer.errors).toBeUndefined();
    expect(answer.data).toEqual({ createCard: { id: made[0]._id, content: "graphql once", position: 3 } });
    expect(answer.extensions.revisions).toEqual([{ treeId: tree._id, revision, kind: "card.create" }]);
    expect((await api.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === "graphql once")).toHaveLength(1);
  });

  it("a GraphQL document of two mutations is answered from both changes (the first carried the key's claim, the second not)", async () => {
    const control = controlFile();
    await start(control);
    const alice = await buildUser(server!.url);
    const tree = await buildTree(alice);
    const query = `mutation Two($first: CreateCardInput!, $second: CreateCardInput!) {
      first: createCard(input: $first) { id content } second: createCard(input: $second) { id content } }`;
    const variables = { first: { treeId: tree._id, position: 1, content: "first of two" }, second: { treeId: tree._id, position: 2, content: "second of two" } };
    const send = (url: string) =>
      fetch(`${url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: alice.authHeader!, "Idempotency-Key": "crash-graphql-two" },
        body: JSON.stringify({ query, variables }),
      });

    server = await crashBeforeTheAnswerIsKept(control, () => send(server!.url).then((res) => res.text()));
    const api = new Api(server.url, alice.credentials);
    const made = (await api.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content.endsWith("of two"));
    expect(made.map((c: any) => c.content).sort()).toEqual(["first of two", "second of two"]);
    const revision = await revisionOf(api, tree._id);

    const retry = await send(server.url);
    expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    const answer = await retry.json();
    expect(answer.errors).toBeUndefined();
    const id = (content: string) => made.find((c: any) => c.content === content)._id;
    expect(answer.data).toEqual({ first: { id: id("first of two"), content: "first of two" }, second: { id: id("second of two"), content: "second of two" } });
    expect(answer.extensions.revisions).toEqual([
      { treeId: tree._id, revision: revision - 1, kind: "card.create" },
      { treeId: tree._id, revision, kind: "card.create" },
    ]);
    expect(await revisionOf(api, tree._id)).toBe(revision);
  });
});

describe("a keyed tree deletion killed between the removal and its kept answer", { timeout: 90_000 }, () => {
  // The deletion writes no change: its removal carries the key, in the same atomic write,
  // and the retry is answered from that (docs/decisions.md, "A tree's deletion exactly once").
  async function treesOf(api: Api): Promise<string[]> {
    return (await api.get("/api/trees")).body.map((t: any) => t._id);
  }

  it("REST: the retry gets the deletion's 204, replayed; the tree stays gone, and no one else is answered from it", async () => {
    const control = controlFile();
    await start(control);
    const alice = await buildUser(server!.url);
    const tree = await buildTree(alice);
    const kept = await buildTree(alice);
    const key = { "Idempotency-Key": "crash-delete-tree-1" };

    server = await crashBeforeTheAnswerIsKept(control, () => alice.delete(`/api/trees/${tree._id}`, key));
    const api = new Api(server.url, alice.credentials);
    expect(await treesOf(api)).toEqual([kept._id]);

    const retry = await api.delete(`/api/trees/${tree._id}`, key);
    expect([retry.status, retry.headers.get("idempotent-replayed"), retry.text]).toEqual([204, "true", ""]);
    expect((await api.get(`/api/trees/${tree._id}/cards`)).status).toBe(404);
    expect(await treesOf(api)).toEqual([kept._id]);
    // The rebuilt answer is kept: the next retry is an ordinary replay.
    const again = await api.delete(`/api/trees/${tree._id}`, key);
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([204, "true"]);

    // The same key on another user, another key on the same tree, and the key on another tree.
    const bob = new Api(server.url, (await buildUser(server.url)).credentials);
    const bobs = await bob.delete(`/api/trees/${tree._id}`, key);
    expect([bobs.status, bobs.headers.get("idempotent-replayed")]).toEqual([404, null]);
    const otherKey = await api.delete(`/api/trees/${tree._id}`, { "Idempotency-Key": "crash-delete-tree-2" });
    expect([otherKey.status, otherKey.headers.get("idempotent-replayed")]).toEqual([404, null]);
    const otherTree = await api.delete(`/api/trees/${kept._id}`, key);
    expect([otherTree.status, otherTree.body.error]).toEqual([422, "idempotency_key_reused"]);
    expect(await treesOf(api)).toEqual([kept._id]);
  });

  it("GraphQL: the retry gets deleteTree's id, replayed, without errors", async () => {
    const control = controlFile();
    await start(control);
    const alice = await buildUser(server!.url);
    const tree = await buildTree(alice);
    const send = (url: string) =>
      fetch(`${url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: alice.authHeader!, "Idempotency-Key": "crash-graphql-delete-tree" },
        body: JSON.stringify({ query: "mutation Delete($id: ID!) { deleteTree(id: $id) }", variables: { id: tree._id } }),
      });

    server = await crashBeforeTheAnswerIsKept(control, () => send(server!.url).then((res) => res.text()));
    const retry = await send(server.url);
    expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(await retry.json()).toEqual({ data: { deleteTree: tree._id } });
    expect(await treesOf(new Api(server.url, alice.credentials))).toEqual([]);
  });
});

describe("GraphQL's moveCard and deleteCard answered from their change after a crash", { timeout: 90_000 }, () => {
  // Their resolvers read the card's old parent before the command; on the retry that read
  // comes from the change (the card as it was), not from the store, where it has moved or gone.
  async function graphqlCrash(mutation: string, key: string, field: string): Promise<{ answer: any; parentId: string }> {
    const control = controlFile();
    await start(control);
    const alice = await buildUser(server!.url);
    const tree = await buildTree(alice);
    const parent = (await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: "old parent" })).body;
    const other = (await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 2, content: "new parent" })).body;
    const card = (await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, parentId: parent._id, position: 1, content: "child" })).body;
    const send = (url: string) =>
      fetch(`${url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: alice.authHeader!, "Idempotency-Key": key },
        body: JSON.stringify({ query: mutation, variables: { treeId: tree._id, id: card._id, parentId: other._id } }),
      });
    server = await crashBeforeTheAnswerIsKept(control, () => send(server!.url).then((res) => res.text()));
    const retry = await send(server.url);
    expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    const answer = await retry.json();
    expect(answer.errors).toBeUndefined();
    return { answer: answer.data[field], parentId: parent._id };
  }

  it("moveCard's `from` is the parent the card left", async () => {
    const { answer, parentId } = await graphqlCrash(
      `mutation Move($treeId: ID!, $id: ID!, $parentId: ID) { moveCard(treeId: $treeId, id: $id, parentId: $parentId, position: 1) { card { content } from { id } } }`,
      "crash-graphql-move",
      "moveCard",
    );
    expect(answer).toEqual({ card: { content: "child" }, from: { id: parentId } });
  });

  it("deleteCard's `parent` is the parent the card was deleted from", async () => {
    const { answer, parentId } = await graphqlCrash(
      `mutation Delete($treeId: ID!, $id: ID!) { deleteCard(treeId: $treeId, id: $id) { parent { id } } }`,
      "crash-graphql-delete",
      "deleteCard",
    );
    expect(answer).toEqual({ parent: { id: parentId } });
  });
});

describe("a keyed write killed just after its answer was sent", { timeout: 90_000 }, () => {
  // Its answer is kept lazily (its change carries the key durably): a kill right after the
  // answer may lose the kept answer, never the change, and the retry answers from the change.
  it("is answered again after the restart, with the status and body the client had, and is not applied twice", async () => {
    const control = controlFile();
    await start(control);
    const alice = await buildUser(server!.url);
    const tree = await buildTree(alice);
    const body = { treeId: tree._id, position: 5, content: "answered, then killed" };
    const key = { "Idempotency-Key": "killed-after-answer-1" };
    const first = await alice.post(`/api/trees/${tree._id}/cards`, body, key);
    expect(first.status).toBe(201);
    await server!.kill();
    server = await startTestServer({ dataDir: server!.dataDir, env: { CARDTREE_FAULTS_FILE: control } });
    if (TEST_STORE === "postgres") {
      // An answer that had not reached the table leaves a claim whose lease (30 s) the test ends.
      const url = await readFile(path.join(server.dataDir, "test-database-url"), "utf8");
      await adminQuery("UPDATE idempotency_keys SET lease_until = '1970-01-01T00:00:00.000Z' WHERE claim IS NOT NULL", url);
    }
    const api = new Api(server.url, alice.credentials);
    const retry = await api.post(`/api/trees/${tree._id}/cards`, body, key);
    expect([retry.status, retry.headers.get("idempotent-replayed"), retry.body]).toEqual([201, "true", first.body]);
    expect(retry.headers.get("x-tree-revision")).toBe(first.headers.get("x-tree-revision"));
    expect((await api.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === body.content)).toHaveLength(1);
  });
});
