/**
 * Compression on the wire (SPEC §12, issue 27), seen as raw bytes: brotli or gzip as
 * Accept-Encoding asks, `Vary: Accept-Encoding`, the same JSON once decoded, a compressed
 * copy per revision (the same bytes until a write), conditional reads across encodings, and
 * live streams never held in a compressor. fetch() decodes on its own, so these requests
 * use node:http.
 */
import { readFile } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildTree, buildUser } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

/** Where the test servers serve the client from (test/global-setup.ts builds it there). */
const WEB_DIR = path.resolve(import.meta.dirname, "../../dist/web");

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

function raw(path: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.get(server.url + path, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
  });
}

function decode(reply: Raw): string {
  const encoding = reply.headers["content-encoding"];
  if (encoding === "br") return zlib.brotliDecompressSync(reply.bytes).toString("utf8");
  if (encoding === "gzip") return zlib.gunzipSync(reply.bytes).toString("utf8");
  expect(encoding ?? "identity").toBe("identity");
  return reply.bytes.toString("utf8");
}

/** A tree whose card list is tens of kilobytes of ordinary prose. */
async function bigTree() {
  const alice = await buildUser(server.url, "alice");
  const paragraph = "The quick brown fox jumps over the lazy dog, and the writer keeps writing. ";
  const seed = Array.from({ length: 120 }, (_, i) => `# Card ${i}\n\n${paragraph.repeat(4)}`).join("\n\n");
  const tree = await buildTree(alice, { seed });
  return { alice, tree, path: `/api/trees/${tree._id}/cards`, auth: { authorization: alice.authHeader! } };
}

describe("cached card lists on the wire", () => {
  it("sends brotli, gzip or plain bytes as asked, each decoding to the same JSON", async () => {
    const { path, auth } = await bigTree();
    const plain = await raw(path, { ...auth, "accept-encoding": "identity" });
    const none = await raw(path, auth);
    const br = await raw(path, { ...auth, "accept-encoding": "gzip, deflate, br" });
    const gzip = await raw(path, { ...auth, "accept-encoding": "gzip" });
    const refusedBr = await raw(path, { ...auth, "accept-encoding": "br;q=0, gzip" });

    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(none.headers["content-encoding"]).toBeUndefined();
    expect(br.headers["content-encoding"]).toBe("br");
    expect(gzip.headers["content-encoding"]).toBe("gzip");
    expect(refusedBr.headers["content-encoding"]).toBe("gzip");
    for (const reply of [plain, none, br, gzip]) {
      expect(reply.status).toBe(200);
      expect(reply.headers.vary).toMatch(/Accept-Encoding/i);
      expect(Number(reply.headers["content-length"])).toBe(reply.bytes.length);
    }
    const json = decode(plain);
    expect(JSON.parse(json)).toHaveLength(120);
    expect(decode(br)).toBe(json);
    expect(decode(gzip)).toBe(json);
    expect(decode(none)).toBe(json);
    // Worth sending: prose compresses several times over.
    expect(br.bytes.length * 4).toBeLessThan(plain.bytes.length);
  });

  it("keeps one compressed copy per revision: the same bytes until a write, then the write's", async () => {
    const { alice, tree, path, auth } = await bigTree();
    const headers = { ...auth, "accept-encoding": "br" };
    const first = await raw(path, headers);
    const again = await raw(path, headers);
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(again.headers.etag).toBe(first.headers.etag);

    await buildCard(alice, tree._id, { parentId: null, content: "written after the first read" });
    const after = await raw(path, headers);
    expect(after.headers.etag).not.toBe(first.headers.etag);
    const cards = JSON.parse(decode(after)) as { content: string }[];
    expect(cards.map((card) => card.content)).toContain("written after the first read");
  });

  it("gives a big list's one reader its fast gzip copy and makes brotli only once a second reader came", async () => {
    const alice = await buildUser(server.url, "alice");
    const paragraph = "A longer card, so that the list passes a quarter of a megabyte: the river ran on. ";
    const seed = Array.from({ length: 400 }, (_, i) => `# Card ${i}\n\n${paragraph.repeat(8)}`).join("\n\n");
    const tree = await buildTree(alice, { seed });
    const path = `/api/trees/${tree._id}/cards`;
    const headers = { authorization: alice.authHeader!, "accept-encoding": "gzip, deflate, br" };
    const plain = await raw(path, { authorization: alice.authHeader!, "accept-encoding": "identity" });
    expect(plain.bytes.length).toBeGreaterThan(256 * 1024);
    const first = await raw(path, headers);
    expect(first.headers["content-encoding"]).toBe("gzip");
    expect(first.headers.etag).toBe(`${plain.headers.etag!.slice(0, -1)}-gzip1"`);
    expect(decode(first)).toBe(plain.bytes.toString("utf8"));
    // Had the first read started brotli (a few hundred milliseconds for this list), this later
    // read would be brotli; it is the same fast copy, and it starts brotli for those after it.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const second = await raw(path, headers);
    expect(second.headers.etag).toBe(first.headers.etag);
    await expect.poll(async () => (await raw(path, headers)).headers["content-encoding"], { timeout: 20_000 }).toBe("br");
    expect(decode(await raw(path, headers))).toBe(plain.bytes.toString("utf8"));
  });

  it("gives each encoding its own ETag, and answers 304 to any of them until the tree changes", async () => {
    const { alice, tree, path, auth } = await bigTree();
    const plain = await raw(path, { ...auth, "accept-encoding": "identity" });
    const br = await raw(path, { ...auth, "accept-encoding": "br" });
    expect(br.headers.etag).not.toBe(plain.headers.etag);
    expect(br.headers.etag).toBe(`${plain.headers.etag!.slice(0, -1)}-br"`);

    for (const etag of [plain.headers.etag!, br.headers.etag!]) {
      const conditional = await raw(path, { ...auth, "accept-encoding": "br", "if-none-match": etag });
      expect(conditional.status).toBe(304);
      expect(conditional.bytes.length).toBe(0);
    }
    await buildCard(alice, tree._id, { parentId: null, content: "changed" });
    const stale = await raw(path, { ...auth, "accept-encoding": "br", "if-none-match": br.headers.etag! });
    expect(stale.status).toBe(200);
    expect(decode(stale)).toContain("changed");
  });

  it("sends a public tree and every tree's cards compressed too", async () => {
    const { alice, tree, auth } = await bigTree();
    const url = `wire-${tree._id}`;
    const published = await alice.put(`/api/trees/${tree._id}`, { publicUrl: url });
    expect(published.status).toBe(200);
    const pub = await raw(`/api/public/${url}`, { "accept-encoding": "gzip" });
    expect(pub.status).toBe(200);
    expect(pub.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(decode(pub)).cards).toHaveLength(120);

    const all = await raw("/api/cards", { ...auth, "accept-encoding": "br" });
    expect(all.headers["content-encoding"]).toBe("br");
    const again = await raw("/api/cards", { ...auth, "accept-encoding": "br" });
    expect(again.bytes.equals(all.bytes)).toBe(true);
    expect(JSON.parse(decode(all))).toHaveLength(120);
  });

  it("leaves small answers plain", async () => {
    const alice = await buildUser(server.url, "small");
    const tree = await buildTree(alice, { seed: "# tiny" });
    const reply = await raw(`/api/trees/${tree._id}/cards`, { authorization: alice.authHeader!, "accept-encoding": "br" });
    expect(reply.headers["content-encoding"]).toBeUndefined();
    expect(JSON.parse(decode(reply))).toHaveLength(1);
  });
});

describe("other answers on the wire", () => {
  it("compresses the client's script and large JSON answers", async () => {
    const page = await raw("/", { "accept-encoding": "gzip" });
    const script = /<script[^>]+src="([^"]+\.js[^"]*)"/.exec(decode(page))?.[1];
    expect(script).toBeDefined();
    const js = await raw(script!.startsWith("/") ? script! : `/${script}`, { "accept-encoding": "br" });
    expect(js.status).toBe(200);
    expect(js.headers["content-encoding"]).toBe("br");
    expect(js.headers.vary).toMatch(/Accept-Encoding/i);
    expect(js.headers["cache-control"]).toContain("immutable");
    expect(js.headers["content-type"]).toMatch(/javascript/);
    expect(decode(js).length).toBeGreaterThan(js.bytes.length * 2);
    // The build's own copies, sent as they are: not compressed again per request.
    const name = path.basename(script!.split("?")[0]);
    expect(js.bytes.equals(await readFile(path.join(WEB_DIR, `${name}.br`)))).toBe(true);
    const gz = await raw(`/${name}`, { "accept-encoding": "gzip" });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gz.bytes.equals(await readFile(path.join(WEB_DIR, `${name}.gz`)))).toBe(true);
    const plain = await raw(`/${name}`, { "accept-encoding": "identity" });
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.bytes.toString("utf8")).toBe(decode(js));

    const spec = await raw("/api/openapi.json", { "accept-encoding": "gzip" });
    expect(spec.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(decode(spec)).openapi).toMatch(/^3\./);
  });

  it("never holds a live stream in a compressor: events arrive as they happen", async () => {
    const { alice, tree, auth } = await bigTree();
    const events = await new Promise<{ headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
      const req = http.get(`${server.url}/api/trees/${tree._id}/events`, { headers: { ...auth, "accept-encoding": "gzip, br", accept: "text/event-stream" } }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
          if (text.includes("arrives at once")) {
            req.destroy();
            resolve({ headers: res.headers, text });
          }
        });
        // Once the stream is open, write the card it must carry.
        setTimeout(() => void buildCard(alice, tree._id, { parentId: null, content: "arrives at once" }).catch(reject), 200);
      });
      req.on("error", (err) => (req.destroyed ? undefined : reject(err)));
    });
    expect(events.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect(events.headers["content-encoding"]).toBeUndefined();
    expect(events.text).toContain("arrives at once");
  });
});
