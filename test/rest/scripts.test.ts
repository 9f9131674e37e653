/**
 * Users' own browser scripts over REST (docs/scripting.md, "Your scripts on the server"):
 * add, list, change, remove, and the script served as a JavaScript file to its owner only;
 * the size and count limits; every failure changing nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

const LIMIT_BYTES = 1000;
const LIMIT_COUNT = 3;

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer({ USER_SCRIPT_BYTES: String(LIMIT_BYTES), USER_SCRIPT_COUNT: String(LIMIT_COUNT) });
});
afterAll(() => server.stop());

const hello = { name: "Hello", body: "window.hello = 'é';\n" };

describe("a user's scripts", () => {
  it("adds, lists (without the text), changes and removes a script", async () => {
    const alice = await buildUser(server.url);
    expect((await alice.get("/api/scripts")).body).toEqual([]);

    const created = await alice.post("/api/scripts", { ...hello, name: "  Hello  " });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: "Hello", enabled: true, size: Buffer.byteLength(hello.body) });
    expect(Object.keys(created.body).sort()).toEqual(["_id", "createdAt", "enabled", "name", "size", "updatedAt"]);
    const id = created.body._id;
    const second = (await alice.post("/api/scripts", { name: "Off", body: "1", enabled: false })).body;
    expect((await alice.get("/api/scripts")).body.map((s: any) => [s._id, s.enabled])).toEqual([
      [id, true],
      [second._id, false],
    ]);

    const changed = await alice.put(`/api/scripts/${id}`, { enabled: false, body: "window.hello = 2;", userId: "ignored" });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ _id: id, name: "Hello", enabled: false, size: 17 });
    expect((await alice.get(`/api/scripts/${id}.js`)).text).toBe("window.hello = 2;");

    expect((await alice.delete(`/api/scripts/${id}`)).status).toBe(204);
    expect((await alice.get("/api/scripts")).body.map((s: any) => s._id)).toEqual([second._id]);
    expect((await alice.get(`/api/scripts/${id}.js`)).status).toBe(404);
    expect((await alice.delete(`/api/scripts/${id}`)).status).toBe(404);
  });

  it("serves the script as private, unsniffable JavaScript, revalidated by its ETag", async () => {
    const alice = await buildUser(server.url);
    const { _id } = (await alice.post("/api/scripts", hello)).body;
    const res = await alice.get(`/api/scripts/${_id}.js`);
    expect(res.status).toBe(200);
    expect(res.text).toBe(hello.body);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("cache-control")).toBe("private, no-cache");
    expect(res.headers.get("cross-origin-resource-policy")).toBe("same-origin");
    const etag = res.headers.get("etag")!;
    expect((await alice.get(`/api/scripts/${_id}.js`, { "If-None-Match": etag })).status).toBe(304);
    await alice.put(`/api/scripts/${_id}`, { name: "Renamed" });
    expect((await alice.get(`/api/scripts/${_id}.js`, { "If-None-Match": etag })).status).toBe(200);
  });

  it("keeps each user's scripts from every other user: 404, and 401 without credentials", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const { _id } = (await alice.post("/api/scripts", hello)).body;
    expect((await bob.get("/api/scripts")).body).toEqual([]);
    for (const res of [
      await bob.get(`/api/scripts/${_id}.js`),
      await bob.put(`/api/scripts/${_id}`, { enabled: false }),
      await bob.delete(`/api/scripts/${_id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error).toBe("not_found");
    }
    const anonymous = alice.anonymous();
    for (const res of [
      await anonymous.get("/api/scripts"),
      await anonymous.post("/api/scripts", hello),
      await anonymous.get(`/api/scripts/${_id}.js`),
      await anonymous.put(`/api/scripts/${_id}`, { enabled: false }),
      await anonymous.delete(`/api/scripts/${_id}`),
    ]) {
      expect(res.status).toBe(401);
      expect(res.body.error).toBe("unauthenticated");
    }
    expect((await alice.get("/api/scripts")).body).toMatchObject([{ _id, enabled: true }]);
    expect((await alice.get(`/api/scripts/${_id}.js`)).text).toBe(hello.body);
  });

  it("refuses bad input with 400 and the field, changing nothing", async () => {
    const alice = await buildUser(server.url);
    const { _id } = (await alice.post("/api/scripts", hello)).body;
    for (const [body, path] of [
      [{ body: "1" }, "name"],
      [{ name: "", body: "1" }, "name"],
      [{ name: "x".repeat(101), body: "1" }, "name"],
      [{ name: "No body" }, "body"],
      [{ name: "Flag", body: "1", enabled: "yes" }, "enabled"],
    ] as const) {
      const res = await alice.post("/api/scripts", body);
      expect(res.status).toBe(400);
      expect(res.body.details[0].path).toBe(path);
    }
    const bad = await alice.put(`/api/scripts/${_id}`, { enabled: 1 });
    expect(bad.status).toBe(400);
    expect((await alice.put("/api/scripts/NOT-AN-ID", { enabled: false })).status).toBe(400);
    expect((await alice.get("/api/scripts/NOT-AN-ID.js")).status).toBe(400);
    expect((await alice.get("/api/scripts")).body).toMatchObject([{ _id, name: "Hello", enabled: true }]);
  });

  it("holds a script to its size limit in UTF-8 bytes (413) and a user to the count (422)", async () => {
    const alice = await buildUser(server.url);
    const atLimit = await alice.post("/api/scripts", { name: "Full", body: "x".repeat(LIMIT_BYTES) });
    expect(atLimit.status).toBe(201);
    // 501 two-byte characters: under the limit in characters, over it in bytes.
    const over = await alice.post("/api/scripts", { name: "Over", body: "é".repeat(LIMIT_BYTES / 2 + 1) });
    expect(over.status).toBe(413);
    expect(over.body.error).toBe("payload_too_large");
    const grow = await alice.put(`/api/scripts/${atLimit.body._id}`, { body: "x".repeat(LIMIT_BYTES + 1) });
    expect(grow.status).toBe(413);
    expect((await alice.get(`/api/scripts/${atLimit.body._id}.js`)).text).toBe("x".repeat(LIMIT_BYTES));

    await alice.post("/api/scripts", hello);
    await alice.post("/api/scripts", hello);
    const fourth = await alice.post("/api/scripts", hello);
    expect(fourth.status).toBe(422);
    expect(fourth.body.error).toBe("limit_reached");
    expect((await alice.get("/api/scripts")).body).toHaveLength(LIMIT_COUNT);
    // Another user's count is their own.
    const bob = await buildUser(server.url);
    expect((await bob.post("/api/scripts", hello)).status).toBe(201);
  });

  it("takes the last place once when two uploads race for it", async () => {
    const alice = await buildUser(server.url);
    await alice.post("/api/scripts", hello);
    await alice.post("/api/scripts", hello);
    const answers = await Promise.all([alice.post("/api/scripts", hello), alice.post("/api/scripts", hello)]);
    expect(answers.map((res) => res.status).sort()).toEqual([201, 422]);
    expect((await alice.get("/api/scripts")).body).toHaveLength(LIMIT_COUNT);
  });

  it("asks a cookie session for its CSRF token before a change", async () => {
    const alice = await buildUser(server.url);
    const login = await fetch(`${server.url}/api/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(alice.credentials),
    });
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    const { csrf } = await login.json();
    const session = alice.anonymous();
    expect((await session.post("/api/scripts", hello, { cookie })).status).toBe(403);
    expect((await session.post("/api/scripts", hello, { cookie, "x-csrf-token": csrf })).status).toBe(201);
  });
});
