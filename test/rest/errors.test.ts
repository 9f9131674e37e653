import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer({ JSON_BODY_LIMIT: "2048" });
});
afterAll(() => server.stop());

describe("the error model", () => {
  it("bad JSON is 400 invalid_request and changes nothing", async () => {
    const alice = await buildUser(server.url);
    const res = await alice.post("/api/trees", '{"name": "x",', { "content-type": "application/json" });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_request", message: expect.any(String) });
    expect((await alice.get("/api/trees")).body).toEqual([]);
  });

  it("a non-JSON body is 415", async () => {
    const alice = await buildUser(server.url);
    const res = await alice.post("/api/trees", "name=x", { "content-type": "application/x-www-form-urlencoded" });
    expect(res.status).toBe(415);
    expect(res.body.error).toBe("unsupported_media_type");
  });

  it("a body labelled with any charset but UTF-8 is 415 and stores nothing, on /api and /graphql", async () => {
    const alice = await buildUser(server.url);
    const utf16 = Buffer.from(JSON.stringify({ name: "Ünïcode" }), "utf16le");
    for (const [path, body] of [
      ["/api/trees", utf16],
      ["/graphql", Buffer.from(JSON.stringify({ query: 'mutation { createTree(input: {name: "x"}) { id } }' }), "utf16le")],
      ["/api/trees", Buffer.from(JSON.stringify({ name: "Latin" }), "latin1")],
    ] as const) {
      for (const charset of ["utf-16", "UTF-16LE", '"utf-16"', "iso-8859-1"]) {
        const res = await fetch(server.url + path, {
          method: "POST",
          headers: { "content-type": `application/json; charset=${charset}`, authorization: alice.authHeader! },
          body: body,
        });
        expect(res.status, `${path} ${charset}`).toBe(415);
        expect(await res.json()).toEqual({ error: "unsupported_media_type", message: expect.stringMatching(/UTF-8/) });
      }
    }
    expect((await alice.get("/api/trees")).body).toEqual([]);
    // UTF-8, said or not, is welcome.
    for (const type of ["application/json", "application/json; charset=utf-8", "application/json;charset=\"UTF-8\""]) {
      const res = await alice.post("/api/trees", JSON.stringify({ name: "Ünïcode" }), { "content-type": type });
      expect(res.status, type).toBe(201);
      expect(res.body.name).toBe("Ünïcode");
    }
  });

  it("an oversized body is 413", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const res = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: "x".repeat(5000) });
    expect(res.status).toBe(413);
    expect(res.body.error).toBe("payload_too_large");
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(1);
  });

  it("unknown /api paths are 404 in the error shape", async () => {
    const alice = await buildUser(server.url);
    for (const path of ["/api/nope", "/api/trees/abc/whatever", "/api"]) {
      const res = await alice.get(path);
      expect(res.status, path).toBe(404);
      expect(res.body.error).toBe("not_found");
    }
  });

  it("a malformed id is 400; a well-formed unknown one is 404", async () => {
    const alice = await buildUser(server.url);
    expect((await alice.get("/api/trees/not-an-id/cards")).status).toBe(400);
    expect((await alice.get("/api/trees/zzzzzzzzzzzzzzzzzzzzzzzz/cards")).status).toBe(404);
    const tree = await buildTree(alice);
    expect((await alice.put(`/api/trees/${tree._id}/cards/BAD`, { content: "x" })).status).toBe(400);
    expect((await alice.put(`/api/trees/${tree._id}/cards/zzzzzzzzzzzzzzzzzzzzzzzz`, { content: "x" })).status).toBe(404);
  });

  it("a non-Basic Authorization header is 401", async () => {
    const res = await new Api(server.url).get("/api/index", { authorization: "Bearer abc" });
    expect(res.status).toBe(401);
  });

  it("/healthz answers 200", async () => {
    const res = await new Api(server.url).get("/healthz");
    expect(res.status).toBe(200);
  });

  it("responses carry security headers", async () => {
    const res = await new Api(server.url).get("/healthz");
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });
});
