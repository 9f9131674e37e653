/**
 * The cached card-list read answered from memory (issue 27): on the embedded store, a
 * caller whose credentials were verified lately and a tree read lately are taken from what
 * the store keeps (`Store.instant`), without a read. A client cannot tell: the same request
 * gets the same status, headers and bytes as when the store is read, and a change to the
 * password or to who may open the tree holds for the very next request. PostgreSQL keeps
 * nothing of the kind (another process may write): there, every request reads.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/domain/ports/store.js";
import { Api, buildCard, buildTree, buildUser, shareTree } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { TEST_STORE } from "../helpers/postgres.js";
import { headerOf, rawRequest, type RawAnswer } from "../helpers/raw-request.js";

const KEEPS_RECORDS = TEST_STORE === "nedb";

let server: InProcessServer;
/** Whether the domain is given the store's instant reads; off, every request reads the store. */
let instantOn = true;

beforeAll(async () => {
  server = await startInProcessServer({}, (store) => {
    const switchable: Store = Object.create(store);
    Object.defineProperty(switchable, "instant", { get: () => (instantOn ? store.instant : undefined) });
    return switchable;
  });
});
afterAll(() => server.stop());

/** The request as answered with the store's instant reads, and the store reads it made. */
async function fromMemory(method: string, path: string, headers: Record<string, string>): Promise<{ answer: RawAnswer; reads: number }> {
  const before = server.reads.count;
  const answer = await rawRequest(server.url, method, path, headers);
  return { answer, reads: server.reads.count - before };
}

/** The same request with every record read from the store. */
async function fromStore(method: string, path: string, headers: Record<string, string>): Promise<RawAnswer> {
  instantOn = false;
  try {
    return await rawRequest(server.url, method, path, headers);
  } finally {
    instantOn = true;
  }
}

const cardsPath = (treeId: string) => `/api/trees/${treeId}/cards`;

describe("the card list answered from memory", () => {
  let alice: Api & { user: any };
  let tree: any;
  let auth: Record<string, string>;

  beforeAll(async () => {
    alice = await buildUser(server.url, "alice");
    const paragraph = "Every writer keeps a tree of cards, and this one reads it back from memory. ";
    tree = await buildTree(alice, { seed: Array.from({ length: 40 }, (_, i) => `# Card ${i}\n\n${paragraph.repeat(3)}`).join("\n\n") });
    auth = { authorization: alice.authHeader! };
    // The full compressed copies, made by the first readers.
    for (const acceptEncoding of ["gzip", "br"]) {
      for (let tries = 0; ; tries++) {
        const etag = headerOf(await rawRequest(server.url, "GET", cardsPath(tree._id), { ...auth, "accept-encoding": acceptEncoding }), "etag");
        if (etag?.endsWith(`-${acceptEncoding}"`)) break;
        if (tries > 200) throw new Error(`no ${acceptEncoding} copy (ETag ${etag})`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
  });

  it("sends the same status, headers and bytes as when it reads the store: every encoding, 304, HEAD", async () => {
    const brTag = headerOf(await rawRequest(server.url, "GET", cardsPath(tree._id), { ...auth, "accept-encoding": "br" }), "etag")!;
    const variants: [string, Record<string, string>][] = [
      ["GET", { "accept-encoding": "br" }],
      ["GET", { "accept-encoding": "gzip" }],
      ["GET", { "accept-encoding": "gzip, deflate, br" }],
      ["GET", { "accept-encoding": "identity" }],
      ["GET", {}],
      ["GET", { "if-none-match": brTag, "accept-encoding": "br" }],
      ["GET", { "if-none-match": brTag, "accept-encoding": "identity" }],
      ["HEAD", { "accept-encoding": "gzip, deflate, br" }],
    ];
    const statuses: number[] = [];
    for (const [method, headers] of variants) {
      const read = await fromStore(method, cardsPath(tree._id), { ...auth, ...headers });
      const { answer, reads } = await fromMemory(method, cardsPath(tree._id), { ...auth, ...headers });
      const what = `${method} ${JSON.stringify(headers)}`;
      expect(reads, what).toBe(KEEPS_RECORDS ? 0 : 2);
      expect(answer.status, what).toBe(read.status);
      expect(answer.headers, what).toEqual(read.headers);
      expect(answer.bytes.equals(read.bytes), what).toBe(true);
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 304, 304, 200]);
    const br = await fromMemory("GET", cardsPath(tree._id), { ...auth, "accept-encoding": "br" });
    expect(br.answer.headers.map(([name]) => name)).toEqual([
      "content-security-policy",
      "x-content-type-options",
      "x-frame-options",
      "referrer-policy",
      "cross-origin-opener-policy",
      "x-card-count",
      "x-cards-revision",
      "content-type",
      "etag",
      "cache-control",
      "vary",
      "content-encoding",
      "content-length",
      "connection",
    ]);
  });

  it("refuses the old password on the very next read once it is changed through the API", async () => {
    const writer = await buildUser(server.url, "changes-password");
    const own = await buildTree(writer, { seed: "# One\n\n# Two" });
    expect((await writer.get(cardsPath(own._id))).status).toBe(200);
    // Known credentials and a tree read lately: answered from memory.
    const cached = await fromMemory("GET", cardsPath(own._id), { authorization: writer.authHeader! });
    expect(cached.answer.status).toBe(200);
    expect(cached.reads).toBe(KEEPS_RECORDS ? 0 : 2);

    const newPassword = "a password nobody else knows";
    expect((await writer.put("/api/index", { currentPassword: writer.credentials!.password, newPassword })).status).toBe(200);
    // The new password first: the user's changed record is read, and kept, before the old
    // credentials come back.
    const renewed = new Api(server.url, { email: writer.credentials!.email, password: newPassword });
    expect((await renewed.get(cardsPath(own._id))).status).toBe(200);
    expect((await writer.get(cardsPath(own._id))).status).toBe(401);
    expect((await writer.get(cardsPath(own._id))).status).toBe(401);
    expect((await renewed.get(cardsPath(own._id))).status).toBe(200);
  });

  it("refuses the old password at once also when it is tried before anyone reads the changed record", async () => {
    const writer = await buildUser(server.url, "changes-password-again");
    const own = await buildTree(writer, { seed: "# One" });
    expect((await writer.get(cardsPath(own._id))).status).toBe(200);
    expect((await writer.put("/api/index", { currentPassword: writer.credentials!.password, newPassword: "another new password" })).status).toBe(200);
    expect((await writer.get(cardsPath(own._id))).status).toBe(401);
  });

  it("answers 404 on the very next read to a collaborator removed from the tree, and to everyone once it is deleted", async () => {
    const owner = await buildUser(server.url, "owner");
    const bob = await buildUser(server.url, "bob");
    const shared = await buildTree(owner, { seed: "# Shared" });
    await shareTree(owner, shared._id, bob);
    expect((await bob.get(cardsPath(shared._id))).status).toBe(200);
    expect((await fromMemory("GET", cardsPath(shared._id), { authorization: bob.authHeader! })).answer.status).toBe(200);

    expect((await owner.delete(`/api/trees/${shared._id}/collaborators/${bob.user._id}`)).status).toBe(204);
    expect((await bob.get(cardsPath(shared._id))).status).toBe(404);
    expect((await owner.get(cardsPath(shared._id))).status).toBe(200);

    expect((await owner.delete(`/api/trees/${shared._id}`)).status).toBe(204);
    expect((await owner.get(cardsPath(shared._id))).status).toBe(404);
  });

  it("serves every write on the next read: a card added, then the list from memory again", async () => {
    const before = await fromMemory("GET", cardsPath(tree._id), auth);
    await buildCard(alice, tree._id, { content: "Written just now" });
    const after = await fromMemory("GET", cardsPath(tree._id), auth);
    expect(after.answer.bytes.toString("utf8")).toContain("Written just now");
    expect(headerOf(after.answer, "etag")).not.toBe(headerOf(before.answer, "etag"));
    expect(Number(headerOf(after.answer, "x-cards-revision"))).toBe(Number(headerOf(before.answer, "x-cards-revision")) + 1);
  });
});

describe("the browser's way in (a session cookie) answered from memory", () => {
  /** Logs in as the browser does; the cookie to send, and the session's CSRF token. */
  async function logIn(user: Api): Promise<{ cookie: string; csrf: string }> {
    const res = await fetch(`${server.url}/api/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(user.credentials) });
    expect(res.status).toBe(200);
    return { cookie: res.headers.getSetCookie()[0].split(";")[0], csrf: ((await res.json()) as { csrf: string }).csrf };
  }

  it("sends what a read of the store sends, without reading the session or its user", async () => {
    const writer = await buildUser(server.url, "cookie-reader");
    const own = await buildTree(writer, { seed: "# One\n\n# Two" });
    const { cookie } = await logIn(writer);
    for (const headers of [{ cookie }, { cookie, "accept-encoding": "br" }] as Record<string, string>[]) {
      // The first read keeps the session, its user and the tree.
      expect((await rawRequest(server.url, "GET", cardsPath(own._id), headers)).status).toBe(200);
      const read = await fromStore("GET", cardsPath(own._id), headers);
      const { answer, reads } = await fromMemory("GET", cardsPath(own._id), headers);
      expect(reads, JSON.stringify(headers)).toBe(KEEPS_RECORDS ? 0 : 2);
      expect(answer.status).toBe(200);
      expect(answer.headers).toEqual(read.headers);
      expect(answer.bytes.equals(read.bytes)).toBe(true);
    }
  });

  it("refuses the cookie on the very next read after its log-out, and after a password change ends the user's other sessions", async () => {
    const writer = await buildUser(server.url, "cookie-leaves");
    const own = await buildTree(writer, { seed: "# One" });
    const first = await logIn(writer);
    const second = await logIn(writer);
    for (const { cookie } of [first, second]) {
      expect((await rawRequest(server.url, "GET", cardsPath(own._id), { cookie })).status).toBe(200);
      const cached = await fromMemory("GET", cardsPath(own._id), { cookie });
      expect(cached.answer.status).toBe(200);
      expect(cached.reads).toBe(KEEPS_RECORDS ? 0 : 2);
    }
    const out = await fetch(`${server.url}/api/logout`, { method: "POST", headers: { cookie: first.cookie, "x-csrf-token": first.csrf } });
    expect(out.status).toBe(204);
    expect((await rawRequest(server.url, "GET", cardsPath(own._id), { cookie: first.cookie })).status).toBe(401);
    expect((await rawRequest(server.url, "GET", "/api/index", { cookie: first.cookie })).status).toBe(401);
    expect((await fromMemory("GET", cardsPath(own._id), { cookie: second.cookie })).answer.status).toBe(200);

    // Changed through Basic credentials: every session of the user ends.
    expect((await writer.put("/api/index", { currentPassword: writer.credentials!.password, newPassword: "the cookie's last password" })).status).toBe(200);
    expect((await rawRequest(server.url, "GET", "/api/index", { cookie: second.cookie })).status).toBe(401);
    expect((await rawRequest(server.url, "GET", cardsPath(own._id), { cookie: second.cookie })).status).toBe(401);
  });
});
