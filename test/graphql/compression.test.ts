/**
 * GraphQL's cached results on the wire (issue 27, SPEC §12): a query answered from the
 * result cache goes out as that result's compressed copy, made once and kept beside the
 * plain bytes (src/http/compression.ts), with `Vary: Accept-Encoding`; a client asking for
 * no compression gets the plain bytes; an edit makes a new result and so a new copy.
 * fetch() decodes on its own, so these requests use node:http.
 */
import http from "node:http";
import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildTree, buildUser, type Api } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes: Buffer;
}

function post(as: Api, body: unknown, headers: Record<string, string>): Promise<Raw> {
  return send(as, "POST", "/graphql", headers, JSON.stringify(body));
}

/** A GET of the same request, its fields in the query string. */
function get(as: Api, body: { query: string; variables?: unknown }, headers: Record<string, string>): Promise<Raw> {
  const search = new URLSearchParams({ query: body.query, variables: JSON.stringify(body.variables ?? {}) });
  return send(as, "GET", `/graphql?${search}`, headers);
}

function send(as: Api, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.url}${path}`,
      { method, headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), authorization: as.authHeader!, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

function decode(reply: Raw): string {
  const encoding = reply.headers["content-encoding"];
  if (encoding === "br") return zlib.brotliDecompressSync(reply.bytes).toString("utf8");
  if (encoding === "gzip") return zlib.gunzipSync(reply.bytes).toString("utf8");
  expect(encoding ?? "identity").toBe("identity");
  return reply.bytes.toString("utf8");
}

const CARDS = "query ($id: ID!) { tree(id: $id) { name cards { id content depth } } }";

describe("GraphQL cached results on the wire", () => {
  it("are sent as their compressed copy as Accept-Encoding asks, plain to a client that asks for none, and anew after an edit", async () => {
    const alice = await buildUser(server.url, "alice");
    const paragraph = "The quick brown fox jumps over the lazy dog, and the writer keeps writing. ";
    const seed = Array.from({ length: 100 }, (_, i) => `# Card ${i}\n\n${paragraph.repeat(4)}`).join("\n\n");
    const tree = await buildTree(alice, { seed });
    const query = { query: CARDS, variables: { id: tree._id } };

    const computed = await post(alice, query, {});
    expect(computed.status).toBe(200);
    const plain = computed.bytes.toString("utf8");
    expect(JSON.parse(plain).data.tree.cards).toHaveLength(100);

    const br = await post(alice, query, { "accept-encoding": "gzip, deflate, br" });
    expect(br.status).toBe(200);
    expect(br.headers["content-encoding"]).toBe("br");
    expect(br.headers["content-type"]).toBe(computed.headers["content-type"]);
    expect(String(br.headers.vary).toLowerCase()).toContain("accept-encoding");
    expect(Number(br.headers["content-length"])).toBe(br.bytes.length);
    expect(br.bytes.length).toBeLessThan(plain.length / 4);
    expect(decode(br)).toBe(plain);
    // The same copy for the next reader; gzip for a client that takes only gzip.
    expect((await post(alice, query, { "accept-encoding": "br" })).bytes.equals(br.bytes)).toBe(true);
    const gzip = await post(alice, query, { "accept-encoding": "gzip" });
    expect(gzip.headers["content-encoding"]).toBe("gzip");
    expect(decode(gzip)).toBe(plain);
    const none = await post(alice, query, { "accept-encoding": "identity" });
    expect(none.headers["content-encoding"]).toBeUndefined();
    expect(none.bytes.toString("utf8")).toBe(plain);

    await buildCard(alice, tree._id, { content: "written after the first reads" });
    const after = await post(alice, query, { "accept-encoding": "br" });
    expect(decode(after)).toContain("written after the first reads");
    const again = await post(alice, query, { "accept-encoding": "br" });
    expect(again.headers["content-encoding"]).toBe("br");
    expect(decode(again)).toBe(decode(after));
  });

  it("over GET too: the same kept copy, not compressed again for each request", async () => {
    const bob = await buildUser(server.url, "bob");
    const seed = Array.from({ length: 50 }, (_, i) => `# Card ${i}\n\n${"Words the writer wrote. ".repeat(20)}`).join("\n\n");
    const tree = await buildTree(bob, { seed });
    const query = { query: CARDS, variables: { id: tree._id } };
    const computed = await get(bob, query, {});
    expect(computed.status).toBe(200);
    const plain = computed.bytes.toString("utf8");
    expect(JSON.parse(plain).data.tree.cards).toHaveLength(50);

    const first = await get(bob, query, { "accept-encoding": "br" });
    expect(first.headers["content-encoding"]).toBe("br");
    expect(String(first.headers.vary).toLowerCase()).toContain("accept-encoding");
    // Sent whole from the kept copy (a length, not a stream compressed as it goes) ...
    expect(Number(first.headers["content-length"])).toBe(first.bytes.length);
    expect(decode(first)).toBe(plain);
    // ... the very copy a POST of the same request gets.
    expect((await post(bob, query, { "accept-encoding": "br" })).bytes.equals(first.bytes)).toBe(true);
    expect((await get(bob, query, { "accept-encoding": "br" })).bytes.equals(first.bytes)).toBe(true);
  });
});
