/**
 * Idempotency-Key on REST writes (SPEC §13): a replay answers the kept status and body with
 * `Idempotent-Replayed: true` and changes nothing; the key with another request is 422; the
 * key while its first request runs is 409 with Retry-After; keys are per user; bad keys are
 * 400; expired keys are swept; every write path takes a key.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildCard, buildSharedTree, buildTree, buildUser, uniqueEmail } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { KEEP_MS, sweepIdempotencyKeys } from "../../src/domain/idempotency.js";
import { newRecordId } from "../../src/shared/ids.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

let serial = 0;
const newKey = () => `key-${Date.now()}-${++serial}`;
const keyed = (key: string, more: Record<string, string> = {}) => ({ "Idempotency-Key": key, ...more });

async function liveCards(api: Api, treeId: string): Promise<any[]> {
  return (await api.get(`/api/trees/${treeId}/cards`)).body;
}

describe("a replay", () => {
  it("answers the kept status, body and revision with Idempotent-Replayed: true, and makes no second card", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const key = newKey();
    const body = { treeId: tree._id, position: 1, content: "once" };
    const first = await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
    expect(again.headers.get("x-tree-revision")).toBe(first.headers.get("x-tree-revision"));
    expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"));
    // Sent with its length, as the first answer was, not chunked.
    expect(first.headers.get("content-length")).toBe(String(Buffer.byteLength(first.text)));
    expect(again.headers.get("content-length")).toBe(first.headers.get("content-length"));
    expect(again.headers.get("transfer-encoding")).toBeNull();
    expect((await liveCards(alice, tree._id)).filter((c) => c.content === "once")).toHaveLength(1);
  });

  it("answers the same bytes when the card's text is not ASCII or must be escaped in JSON", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const key = newKey();
    const body = { treeId: tree._id, position: 1, content: 'Crème brûlée 🍮 «quoted» "twice" \\ back\nslash, 日本語, \u2028 and \u0000' };
    const first = await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    expect(first.status).toBe(201);
    const again = await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
    expect(again.body.content).toBe(body.content);
  });

  it("of a refused write answers the same refusal (a 4xx is kept), even once the request would succeed", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const parentId = newRecordId();
    const key = newKey();
    const body = { treeId: tree._id, position: 1, parentId, content: "child" };
    // No such parent (yet): 404.
    const first = await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    expect(first.status).toBe(404);
    await alice.post(`/api/trees/${tree._id}/cards`, { _id: parentId, treeId: tree._id, position: 2 });
    const again = await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    expect(again.status).toBe(404);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect((await liveCards(alice, tree._id)).map((c) => c.content)).not.toContain("child");
  });

  it("of a delete answers what the delete did, not 404", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const card = await buildCard(alice, tree._id, { content: "going" });
    const key = newKey();
    const first = await alice.delete(`/api/trees/${tree._id}/cards/${card._id}`, keyed(key));
    expect(first.body).toEqual({ deleted: [card._id] });
    const again = await alice.delete(`/api/trees/${tree._id}/cards/${card._id}`, keyed(key));
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ deleted: [card._id] });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    // Without the key, the same delete is a new request: the card is gone.
    expect((await alice.delete(`/api/trees/${tree._id}/cards/${card._id}`)).status).toBe(404);
  });
});

describe("the same key with another request", () => {
  it("is 422 idempotency_key_reused, for another body, path, method or If-Match, and changes nothing", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const card = await buildCard(alice, tree._id, { content: "v0" });
    const key = newKey();
    const path = `/api/trees/${tree._id}/cards/${card._id}`;
    expect((await alice.put(path, { content: "v1" }, keyed(key))).status).toBe(200);
    const others = [
      () => alice.put(path, { content: "v2" }, keyed(key)),
      () => alice.put(path, { content: "v1" }, keyed(key, { "If-Match": '"1"' })),
      () => alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 5, content: "v1" }, keyed(key)),
      () => alice.delete(path, keyed(key)),
    ];
    for (const other of others) {
      const res = await other();
      expect(res.status).toBe(422);
      expect(res.body.error).toBe("idempotency_key_reused");
    }
    const cards = await liveCards(alice, tree._id);
    expect(cards.find((c) => c._id === card._id)).toMatchObject({ content: "v1", __v: 1 });
    expect(cards).toHaveLength(2);
  });
});

describe("the same key while the first request runs", () => {
  it("is 409 conflict with Retry-After; the first finishes and is then replayed", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const key = newKey();
    const body = { treeId: tree._id, position: 1, content: "slow" };
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Holds the tree's write lock: whichever request claims the key first waits on it.
    const holding = server.ctx.treeLocks.run(tree._id, () => held);
    const first = alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    const second = alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    const refused = await Promise.race([first, second]);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe("conflict");
    expect(refused.headers.get("retry-after")).toBe("1");
    release();
    await holding;
    const answers = await Promise.all([first, second]);
    const done = answers.find((r) => r !== refused)!;
    expect(done.status).toBe(201);
    const replay = await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(done.body);
    expect((await liveCards(alice, tree._id)).filter((c) => c.content === "slow")).toHaveLength(1);
  });
});

describe("keys are per user", () => {
  it("one user's key never answers another's request, even on a shared tree", async () => {
    const { alice, bob, tree } = await buildSharedTree(server.url);
    const key = newKey();
    const body = { treeId: tree._id, position: 1, content: "same words" };
    const mine = await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    const theirs = await bob.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(theirs.body._id).not.toBe(mine.body._id);
    expect((await liveCards(alice, tree._id)).filter((c) => c.content === "same words")).toHaveLength(2);
  });
});

describe("bad keys", () => {
  it("are 400 invalid_request naming the header, and change nothing", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    for (const key of ["", "k".repeat(256), "with space", "caf\u00e9", "tab\there"]) {
      const res = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: "bad key" }, keyed(key));
      expect(res.status, JSON.stringify(key)).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.details).toEqual([expect.objectContaining({ path: "Idempotency-Key" })]);
    }
    const longest = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: "good key" }, keyed("~".repeat(255)));
    expect(longest.status).toBe(201);
    expect((await liveCards(alice, tree._id)).map((c) => c.content)).toEqual(["", "good key"]);
  });
});

describe("without a user", () => {
  it("sign-up and log-in ignore the key: each runs, and nothing is replayed", async () => {
    const anonymous = new Api(server.url);
    const key = newKey();
    const credentials = { email: uniqueEmail(), password: "correct horse battery" };
    expect((await anonymous.post("/api/signup", credentials, keyed(key))).status).toBe(201);
    const again = await anonymous.post("/api/signup", credentials, keyed(key));
    expect(again.status).toBe(409);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
    const login = await anonymous.post("/api/login", credentials, keyed(key));
    expect(login.status).toBe(200);
    expect(login.headers.get("set-cookie")).toContain("=");
  });
});

describe("expired keys", () => {
  it("are swept: after the sweep, the key runs its request anew", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const key = newKey();
    const body = { treeId: tree._id, position: 1, content: "a day" };
    expect((await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key))).status).toBe(201);
    // A sweep within the day keeps it.
    await sweepIdempotencyKeys(server.ctx, new Date(Date.now() + KEEP_MS - 60_000).toISOString());
    expect((await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key))).headers.get("idempotent-replayed")).toBe("true");
    expect(await sweepIdempotencyKeys(server.ctx, new Date(Date.now() + KEEP_MS + 60_000).toISOString())).toBeGreaterThan(0);
    const anew = await alice.post(`/api/trees/${tree._id}/cards`, body, keyed(key));
    expect(anew.status).toBe(201);
    expect(anew.headers.get("idempotent-replayed")).toBeNull();
    expect((await liveCards(alice, tree._id)).filter((c) => c.content === "a day")).toHaveLength(2);
  });
});

describe("every write path takes a key", () => {
  it("each write, sent twice with its key, is answered the second time from what was kept", async () => {
    const { alice, bob, tree, root } = await buildSharedTree(server.url);
    const carol = await buildUser(server.url, "carol");
    const card = await buildCard(alice, tree._id, { content: "to edit", parentId: root._id });
    const doomed = await buildCard(alice, tree._id, { content: "to delete", parentId: root._id });
    const other = await buildTree(alice, { name: "other" });
    const t = `/api/trees/${tree._id}`;
    const script = (await alice.post("/api/scripts", { name: "s", body: "1" })).body;
    const writes: [string, string, unknown?][] = [
      ["PUT", "/api/index", { favoriteTrees: [tree._id] }],
      ["PUT", "/api/preferences", { theme: "dark" }],
      ["POST", "/api/trees", { name: "keyed tree" }],
      ["PUT", t, { name: "renamed" }],
      ["POST", `${t}/clone`],
      ["POST", `${t}/collaborators`, { email: carol.user.email }],
      ["DELETE", `${t}/collaborators/${carol.user._id}`],
      ["POST", `${t}/cards`, { treeId: tree._id, position: 9 }],
      ["PUT", `${t}/cards/${card._id}`, { content: "edited" }],
      ["DELETE", `${t}/cards/${doomed._id}`],
      ["POST", `${t}/cards/${doomed._id}/restore`],
      ["POST", `${t}/cards/seed`, { seed: "# seeded" }],
      ["POST", `${t}/restore`, { revision: 1 }],
      ["POST", `${t}/changes/3/revert`, { force: true }],
      ["POST", "/api/scripts", { name: "keyed", body: "2" }],
      ["PUT", `/api/scripts/${script._id}`, { enabled: false }],
      ["DELETE", `/api/scripts/${script._id}`],
      ["DELETE", `/api/trees/${other._id}`],
    ];
    expect(bob).toBeDefined();
    for (const [method, path, body] of writes) {
      const key = newKey();
      const first = await alice.request(method, path, body, keyed(key));
      expect(first.status, `${method} ${path}: ${first.text}`).toBeLessThan(300);
      const again = await alice.request(method, path, body, keyed(key));
      expect(again.headers.get("idempotent-replayed"), `${method} ${path}`).toBe("true");
      expect([again.status, again.text], `${method} ${path}`).toEqual([first.status, first.text]);
    }
  });
});
