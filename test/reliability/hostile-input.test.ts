/**
 * Hostile input (issue 7.4): random and malformed ids, bodies, query flags, Markdown and
 * JSON seeds (and OPML and Gingko Writer files) at every endpoint. The server never answers 500 to bad input, never stops
 * answering, and a refused request changes no data. Then the specific attacks: oversized
 * and deep bodies, huge headers, bytes that are not UTF-8, and slow clients.
 */
import net from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
let alice: Api & { user: any };
let bob: Api & { user: any };
let tree: any;
let card: any;
let bobsTree: any;

beforeAll(async () => {
  server = await startTestServer({ env: { LOG: "off", HEADERS_TIMEOUT_MS: "1500", REQUEST_TIMEOUT_MS: "3000" } });
  alice = await buildUser(server.url, "alice");
  bob = await buildUser(server.url, "bob");
  tree = await buildTree(alice, { seed: "# a\n\n## b" });
  card = await buildCard(alice, tree._id, { content: "c", position: 3 });
  bobsTree = await buildTree(bob, { name: "bob's private tree" });
}, 60_000);
afterAll(() => server.stop());

/** Everything both users can see: what a refused request must leave as it was. */
async function everything(): Promise<string> {
  const parts = await Promise.all([alice.get("/api/cards"), alice.get("/api/trees"), bob.get("/api/cards"), bob.get("/api/trees"), alice.get("/api/index"), bob.get("/api/index")]);
  return JSON.stringify(parts.map((p) => [p.status, p.body]));
}

const anyId = fc.oneof(
  fc.constantFrom(() => tree._id, () => card._id, () => bobsTree._id).map((f) => f()),
  fc.stringMatching(/^[a-z0-9]{24}$/),
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
  fc.constantFrom("%", "%FF", "%C0%AF", "..%2F..%2Fetc%2Fpasswd", "%00", "a%2Fb", "__proto__", "constructor"),
);
const markdown = fc.array(fc.constantFrom("# ", "## ", "###### ", "#x", "\n", "\n\n", "- item", "```", "> ", "| a | b |", "text", "\u0000", "\uFFFF", "😀", "<script>", "$$"), { maxLength: 30 }).map((p) => p.join(""));
const jsonSeed = fc.oneof(fc.json({ maxDepth: 4 }), fc.constant("[".repeat(5000)), fc.constant(JSON.stringify([{ content: 1 }])));
// OPML and Gingko Writer files (SPEC §14): fragments of both, valid or not, with DOCTYPEs and entities.
const opmlSeed = fc
  .array(fc.constantFrom('<?xml version="1.0"?>', "<opml>", '<opml version="2.0">', "<body>", "</body>", "<outline", ' text="a', "\n", '"', "/>", ">", "</outline>", "</opml>", ' _note="', "&#10;", "&nbsp;", "&#0;", "&#xD800;", "<br>", '<!DOCTYPE opml [<!ENTITY x "y">]>', "&x;", "<![CDATA[", "]]>", "<!--", "-->", "<"), { maxLength: 30 })
  .map((parts) => `<?xml version="1.0"?>${parts.join("")}`);
const gkwSeed = fc
  .array(fc.constantFrom('<gingko-card id="', "abc", "gkwcard0000000000000000a", '">', "\n\n", "text", "</gingko-card>", "< /gingko-card >", "&lt;", "&amp;", "\r\n"), { maxLength: 30 })
  .map((parts) => `<gingko-card id="x">${parts.join("")}`);
const body = fc.oneof(
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 60 }),
  fc.constantFrom("{", "[]", "null", "\"x\"", "{\"__proto__\":{\"admin\":true}}", "1e999", "{\"a\":".repeat(3000)),
  fc.record(
    {
      name: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.constant("x".repeat(300))),
      content: fc.oneof(fc.string(), fc.integer(), fc.object()),
      position: fc.oneof(fc.double(), fc.string(), fc.constant(null)),
      parentId: fc.oneof(anyId, fc.constant(null), fc.integer()),
      treeId: fc.oneof(anyId, fc.constant(null)),
      seed: fc.oneof(markdown, jsonSeed, opmlSeed, gkwSeed, fc.integer()),
      publicUrl: fc.oneof(fc.string(), fc.constant(null)),
      latex: fc.oneof(fc.boolean(), fc.string()),
      email: fc.oneof(fc.emailAddress(), fc.string()),
      password: fc.oneof(fc.string(), fc.constant("p".repeat(2000))),
      favoriteTrees: fc.oneof(fc.array(anyId), fc.string()),
      currentPassword: fc.string(),
      newPassword: fc.string(),
    },
    { requiredKeys: [] },
  ).map((o) => JSON.stringify(o)),
);
const query = fc.dictionary(fc.constantFrom("cardId", "column", "newlines", "start", "end", "x", "column[]"), fc.oneof(fc.string({ maxLength: 10 }), fc.constant("-1"), fc.constant("1e9")), { maxKeys: 4 }).map((q) => new URLSearchParams(q).toString());

type Call = { method: string; path: string };
const call: fc.Arbitrary<Call> = fc.oneof(
  fc.tuple(anyId).map(([t]) => ({ method: "GET", path: `/api/trees/${t}/cards` })),
  fc.tuple(anyId).map(([t]) => ({ method: "POST", path: `/api/trees/${t}/cards` })),
  fc.tuple(anyId, anyId).map(([t, c]) => ({ method: "PUT", path: `/api/trees/${t}/cards/${c}` })),
  fc.tuple(anyId, anyId).map(([t, c]) => ({ method: "DELETE", path: `/api/trees/${t}/cards/${c}` })),
  fc.tuple(anyId).map(([t]) => ({ method: "POST", path: `/api/trees/${t}/cards/seed` })),
  fc.constant({ method: "POST", path: "/api/trees" }),
  fc.tuple(anyId).map(([t]) => ({ method: "PUT", path: `/api/trees/${t}` })),
  fc.tuple(anyId).map(([t]) => ({ method: "DELETE", path: `/api/trees/${t}` })),
  fc.tuple(anyId).map(([t]) => ({ method: "POST", path: `/api/trees/${t}/clone` })),
  fc.tuple(anyId).map(([t]) => ({ method: "POST", path: `/api/trees/${t}/clonePublic` })),
  fc.tuple(anyId).map(([t]) => ({ method: "GET", path: `/api/trees/${t}/collaborators` })),
  fc.tuple(anyId).map(([t]) => ({ method: "POST", path: `/api/trees/${t}/collaborators` })),
  fc.tuple(anyId, anyId).map(([t, u]) => ({ method: "DELETE", path: `/api/trees/${t}/collaborators/${u}` })),
  fc.tuple(anyId, fc.constantFrom("txt", "md", "html", "json", "docx", "impress", "exe", ""), query).map(([t, f, q]) => ({ method: "GET", path: `/api/export/${t}.${f}?${q}` })),
  fc.tuple(anyId).map(([u]) => ({ method: "GET", path: `/api/public/${u}` })),
  fc.constantFrom({ method: "PUT", path: "/api/index" }, { method: "POST", path: "/api/login" }, { method: "POST", path: "/api/signup" }, { method: "POST", path: "/graphql" }),
);

describe("random and malformed requests", () => {
  it("never get a 500, and a refused one changes nothing", async () => {
    await fc.assert(
      fc.asyncProperty(call, body, fc.constantFrom("application/json", "text/plain", "application/json; charset=utf-16"), async (c, payload, type) => {
        const before = await everything();
        const hasBody = c.method !== "GET" && c.method !== "DELETE";
        const res = await alice.request(c.method, c.path, hasBody ? payload : undefined, hasBody ? { "content-type": type } : {});
        expect(res.status, `${c.method} ${c.path} ${payload.slice(0, 80)}`).toBeLessThan(500);
        if (res.status >= 400 && !c.path.startsWith("/graphql")) expect(await everything()).toBe(before);
      }),
      { numRuns: 250 },
    );
    expect((await new Api(server.url).get("/healthz")).status).toBe(200);
  }, 180_000);
});

describe("specific attacks", () => {
  it("an oversized body is 413 and changes nothing", async () => {
    const before = await everything();
    const res = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: "x".repeat(1100 * 1024) });
    expect(res.status).toBe(413);
    expect(await everything()).toBe(before);
  });

  it("deeply nested JSON, as a body and as a seed, is refused without a 500", async () => {
    const deep = "[".repeat(200_000) + "]".repeat(200_000);
    expect((await alice.post("/api/trees", deep)).status).toBe(400);
    const levels = 20_000;
    const seed = `[${'{"content":"level","children":['.repeat(levels)}{"content":"leaf"}${"]}".repeat(levels)}]`;
    const res = await alice.post(`/api/trees/${tree._id}/cards/seed`, JSON.stringify({ parentId: null, seed }));
    expect(res.status).toBeLessThan(500);
    expect((await new Api(server.url).get("/healthz")).status).toBe(200);
  }, 60_000);

  it("bytes that are not UTF-8 are 400, in a body and in a path", async () => {
    const res = await fetch(`${server.url}/api/trees`, {
      method: "POST",
      headers: { authorization: alice.authHeader!, "content-type": "application/json" },
      body: Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe, 0xc0]), Buffer.from('"}')]),
    });
    expect(res.status).toBe(400);
    expect((await alice.get("/api/trees/%FF%FE/cards")).status).toBe(400);
  });

  it("huge headers are refused (431) and the server keeps answering", async () => {
    const res = await fetch(`${server.url}/api/index`, { headers: { authorization: alice.authHeader!, "x-filler": "x".repeat(64 * 1024) } }).catch(() => null);
    if (res) expect(res.status).toBe(431);
    expect((await alice.get("/api/index")).status).toBe(200);
  });

  it("a client that sends its headers too slowly is cut off, and others are served meanwhile", async () => {
    const socket = net.connect(new URL(server.url).port as unknown as number, "127.0.0.1");
    const closed = new Promise<string>((resolve) => {
      let received = "";
      socket.on("data", (d) => (received += d.toString()));
      socket.on("close", () => resolve(received));
      socket.on("error", () => resolve(received));
    });
    socket.write("GET /api/index HTTP/1.1\r\nHost: x\r\n");
    const drip = setInterval(() => socket.writable && socket.write("X-Slow: 1\r\n"), 300);
    const started = Date.now();
    expect((await alice.get("/api/index")).status).toBe(200);
    const answer = await closed;
    clearInterval(drip);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(answer === "" || answer.startsWith("HTTP/1.1 408")).toBe(true);
  }, 20_000);

  it("one address may hold at most 1,024 open connections: past that a new one is closed at once, the others stay", async () => {
    // A server of its own with the usual timeouts: this file's short headers timeout would
    // close the idle connections held here.
    const own = await startTestServer();
    const port = Number(new URL(own.url).port);
    /** A connection that says nothing; `closedByServer` settles if the server closes it. */
    const open = () =>
      new Promise<{ socket: net.Socket; closedByServer: Promise<boolean> }>((resolve, reject) => {
        const socket = net.connect(port, "127.0.0.1");
        const closedByServer = new Promise<boolean>((done) => socket.once("close", () => done(true)));
        socket.once("connect", () => resolve({ socket, closedByServer }));
        socket.once("error", reject);
      });
    const closedWithin = (connection: { closedByServer: Promise<boolean> }, ms: number) =>
      Promise.race([connection.closedByServer, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
    const held: Awaited<ReturnType<typeof open>>[] = [];
    onTestFinished(() => own.stop());
    try {
      for (let batch = 0; batch < 11; batch++) held.push(...(await Promise.all(Array.from({ length: 100 }, open))));
      // 1,100 opened: each one past 1,024 is closed as the server accepts it, the others stay
      // (a kept-alive connection of the start-up's health checks may still hold a place or
      // two). Which ones are closed is not asserted: on a busy machine the kernel's accept
      // queue (511) overflows, a connection the client counts as open reaches the server
      // only when its handshake is sent again, seconds later, and the order is lost.
      let closedCount = 0;
      for (const connection of held) void connection.closedByServer.then(() => closedCount++);
      await expect.poll(() => closedCount, { timeout: 30_000, interval: 100 }).toBeGreaterThanOrEqual(1100 - 1024);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(closedCount).toBeLessThanOrEqual(1100 - 1020);
      expect(await closedWithin(await open(), 1000)).toBe(true);
      expect(own.output.filter((line) => line.includes("connection refused"))).toHaveLength(1);
    } finally {
      for (const { socket } of held) socket.destroy();
    }
    // Once they are gone, the address is served again.
    await expect.poll(async () => (await fetch(`${own.url}/healthz`).catch(() => null))?.status).toBe(200);
  }, 60_000);
});
