/**
 * The direct route for a tree's card list (src/http/direct-routes.ts, issue 27) answers
 * exactly as express's router does: the same request sent both ways, on one server and one
 * data directory, gets the same status, headers, bytes and request log line, for every
 * encoding, conditional request, credential and refusal. A client cannot tell the two apart;
 * the server's count of direct answers shows which way each request went.
 */
import { rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../src/config.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { dropTestDatabase, storeEnv } from "../helpers/postgres.js";
import { freshDataDir } from "../helpers/server.js";
import { rawRequest as raw, type RawAnswer as Raw } from "../helpers/raw-request.js";

/** A request carrying this header goes through express even where the direct route would take it. */
const VIA_EXPRESS = "x-test-via-express";

interface Started {
  server: RunningServer;
  stop(): Promise<void>;
}

async function start(env: Record<string, string> = {}): Promise<Started> {
  const dataDir = await freshDataDir();
  const store = await storeEnv(dataDir);
  const hashCost = process.env.PASSWORD_HASH_COST ? { PASSWORD_HASH_COST: process.env.PASSWORD_HASH_COST } : {};
  const config = loadConfig({ PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, LOG: "on", ...hashCost, ...store, ...env });
  const server = await startServer(config, { viaExpress: (req) => req.headers[VIA_EXPRESS] === "1" });
  return {
    server,
    stop: async () => {
      await server.close();
      if (store.DATABASE_URL) await dropTestDatabase(store.DATABASE_URL);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The request log lines written while `work` ran (the server logs to stdout). */
async function logged<T>(work: () => Promise<T>): Promise<{ result: T; lines: Record<string, unknown>[] }> {
  const lines: Record<string, unknown>[] = [];
  const write = process.stdout.write.bind(process.stdout);
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = String(chunk);
    if (text.startsWith('{"time"')) {
      for (const line of text.trim().split("\n")) lines.push(JSON.parse(line) as Record<string, unknown>);
      return true;
    }
    return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
  });
  try {
    const result = await work();
    // The log line is written when the response finishes, which may follow the client's end by a tick.
    await new Promise((resolve) => setTimeout(resolve, 20));
    return { result, lines };
  } finally {
    spy.mockRestore();
  }
}

/** A log line without what differs between any two requests (time, duration). */
function comparable(line: Record<string, unknown>): Record<string, unknown> {
  const { time: _time, ms: _ms, ...rest } = line;
  return rest;
}

/**
 * Sends the request through express, then directly; expects the same answer and log line,
 * and that the second one was the direct route's. Returns the direct answer.
 */
async function bothWays(started: Started, method: string, path: string, headers: Record<string, string> = {}): Promise<Raw & { logLine: Record<string, unknown> }> {
  const { server } = started;
  const before = server.directAnswers();
  const viaExpress = await logged(() => raw(server.url, method, path, { ...headers, [VIA_EXPRESS]: "1" }));
  expect(server.directAnswers()).toBe(before);
  const direct = await logged(() => raw(server.url, method, path, { ...headers, [VIA_EXPRESS]: "0" }));
  expect(server.directAnswers(), `${method} ${path} should take the direct route`).toBe(before + 1);
  expect(direct.result.status).toBe(viaExpress.result.status);
  expect(direct.result.headers).toEqual(viaExpress.result.headers);
  expect(direct.result.bytes.equals(viaExpress.result.bytes)).toBe(true);
  const requestLines = (lines: Record<string, unknown>[]) => lines.filter((line) => line.message === "request").map(comparable);
  expect(requestLines(direct.lines)).toEqual(requestLines(viaExpress.lines));
  expect(requestLines(direct.lines)).toHaveLength(1);
  return { ...direct.result, logLine: requestLines(direct.lines)[0] };
}

describe("the direct route for a tree's cards", () => {
  let started: Started;
  let alice: Api & { user: any };
  let tree: any;
  let path: string;
  let auth: Record<string, string>;

  beforeAll(async () => {
    started = await start();
    alice = await buildUser(started.server.url, "alice");
    const paragraph = "The quick brown fox jumps over the lazy dog, and the writer keeps writing. ";
    tree = await buildTree(alice, { seed: Array.from({ length: 60 }, (_, i) => `# Card ${i}\n\n${paragraph.repeat(3)}`).join("\n\n") });
    path = `/api/trees/${tree._id}/cards`;
    auth = { authorization: alice.authHeader! };
  });
  afterAll(() => started.stop());

  it("answers every encoding as express does: the same status, headers and bytes", async () => {
    // The compressed copies exist after the first readers; read both ways until they are there.
    for (const acceptEncoding of ["gzip, deflate, br", "gzip", "br"]) await raw(started.server.url, "GET", path, { ...auth, "accept-encoding": acceptEncoding });
    const variants: Record<string, string>[] = [{}, { "accept-encoding": "identity" }, { "accept-encoding": "gzip" }, { "accept-encoding": "gzip, deflate, br" }, { "accept-encoding": "br;q=0, gzip" }, { "accept-encoding": "*;q=0" }];
    for (const headers of variants) {
      const answer = await bothWays(started, "GET", path, { ...auth, ...headers });
      expect(answer.status).toBe(200);
      expect(answer.headers).toEqual(expect.arrayContaining([["vary", "Accept-Encoding"], ["x-content-type-options", "nosniff"]]));
      expect(answer.bytes.length).toBeGreaterThan(0);
    }
    const head = await bothWays(started, "HEAD", path, { ...auth, "accept-encoding": "gzip, deflate, br" });
    expect(head.status).toBe(200);
    expect(head.bytes.length).toBe(0);
    await bothWays(started, "GET", `${path}?anything=1`, auth);
  });

  it("logs the socket's address, not a client's X-Forwarded-For, without TRUST_PROXY", async () => {
    const answer = await bothWays(started, "GET", path, { ...auth, "x-forwarded-for": "203.0.113.7" });
    expect(answer.logLine.address).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
    expect(answer.logLine.path).toBe(path);
    expect(answer.logLine.user).toBe(alice.user._id);
  });

  it("answers 304 for an ETag the client holds, in any encoding, as express does", async () => {
    const plain = await raw(started.server.url, "GET", path, auth);
    const br = await raw(started.server.url, "GET", path, { ...auth, "accept-encoding": "br" });
    const plainTag = plain.headers.find(([name]) => name === "etag")![1];
    const brTag = br.headers.find(([name]) => name === "etag")![1];
    expect(brTag).not.toBe(plainTag);
    for (const [tag, acceptEncoding] of [[plainTag, "br"], [brTag, "identity"], ["*", "gzip"]]) {
      const answer = await bothWays(started, "GET", path, { ...auth, "if-none-match": tag, "accept-encoding": acceptEncoding });
      expect(answer.status).toBe(304);
      expect(answer.bytes.length).toBe(0);
    }
    expect((await bothWays(started, "GET", path, { ...auth, "if-none-match": '"other"' })).status).toBe(200);
  });

  it("never serves a revision older than the tree's: an edit, then the new list", async () => {
    const before = await raw(started.server.url, "GET", path, { ...auth, "accept-encoding": "br" });
    const oldTag = before.headers.find(([name]) => name === "etag")![1];
    const cards = (await alice.request("GET", path)).body as { _id: string }[];
    expect((await alice.request("PUT", `${path}/${cards[0]._id}`, { content: "# Edited through the API" })).status).toBe(200);
    const after = await bothWays(started, "GET", path, { ...auth, "if-none-match": oldTag });
    expect(after.status).toBe(200);
    expect(after.headers.find(([name]) => name === "etag")![1]).not.toBe(oldTag);
    expect(after.bytes.toString("utf8")).toContain("Edited through the API");
    // And a new card, through another route, shows up on the very next direct read.
    await buildCard(alice, tree._id, { content: "A card added last" });
    const added = await bothWays(started, "GET", path, auth);
    expect(added.bytes.toString("utf8")).toContain("A card added last");
  });

  it("refuses as express does: strangers get 404, anonymous and wrong credentials 401, a bad id 400", async () => {
    const stranger = await buildUser(started.server.url, "stranger");
    const refusals: [Record<string, string>, string, number][] = [
      [{ authorization: stranger.authHeader! }, path, 404],
      [{}, path, 401],
      [{ "x-requested-with": "XMLHttpRequest" }, path, 401],
      [{ authorization: `Basic ${Buffer.from(`${alice.credentials!.email}:wrong password`).toString("base64")}` }, path, 401],
      [{ authorization: "Bearer something" }, path, 401],
      [auth, "/api/trees/not-an-id/cards", 400],
      [auth, `/api/trees/${"0".repeat(24)}/cards`, 404],
    ];
    for (const [headers, target, status] of refusals) {
      const answer = await bothWays(started, "GET", target, headers);
      expect(answer.status, `${target} with ${JSON.stringify(headers)}`).toBe(status);
      expect(JSON.parse(answer.bytes.toString("utf8")).error).toBeTypeOf("string");
    }
  });

  it("reads a cookie session's lists as express does", async () => {
    const login = await new Api(started.server.url).request("POST", "/api/login", alice.credentials);
    expect(login.status).toBe(200);
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    const answer = await bothWays(started, "GET", path, { cookie, "accept-encoding": "gzip" });
    expect(answer.status).toBe(200);
    // A session cookie that names no session is anonymous.
    expect((await bothWays(started, "GET", path, { cookie: `${cookie.split("=")[0]}=nothing` })).status).toBe(401);
  });

  it("leaves the router's other spellings of the path, and other methods, to express", async () => {
    const before = started.server.directAnswers();
    expect((await raw(started.server.url, "GET", `${path}/`, auth)).status).toBe(200);
    // The router decodes a percent-escaped id; the direct route does not take one at all.
    const escaped = `/api/trees/%${tree._id.charCodeAt(0).toString(16)}${tree._id.slice(1)}/cards`;
    expect((await raw(started.server.url, "GET", escaped, auth)).status).toBe(200);
    expect((await raw(started.server.url, "GET", path.toUpperCase().replace(tree._id.toUpperCase(), tree._id), auth)).status).toBe(200);
    expect((await raw(started.server.url, "GET", `/api/trees/${tree._id}/collaborators`, auth)).status).toBe(200);
    expect((await raw(started.server.url, "POST", path, { ...auth, "content-type": "application/json" })).status).not.toBe(200);
    expect(started.server.directAnswers()).toBe(before);
  });
});

describe("the direct route behind a proxy", () => {
  let started: Started;
  beforeAll(async () => {
    started = await start({ TRUST_PROXY: "loopback" });
  });
  afterAll(() => started.stop());

  it("takes the client's address and scheme from the proxy as express does (the log line, HSTS)", async () => {
    const alice = await buildUser(started.server.url, "proxied");
    const tree = await buildTree(alice, { seed: "# One\n\n# Two" });
    const headers = { authorization: alice.authHeader!, "x-forwarded-for": "203.0.113.7", "x-forwarded-proto": "https" };
    const direct = await bothWays(started, "GET", `/api/trees/${tree._id}/cards`, headers);
    expect(direct.headers).toEqual(expect.arrayContaining([["strict-transport-security", "max-age=15552000"]]));
    expect(direct.logLine.address).toBe("203.0.113.7");
    expect(direct.logLine.user).toBe(alice.user._id);
  });
});
