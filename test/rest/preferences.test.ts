/**
 * `GET/PUT /api/preferences`: a user's appearance preferences, kept on the server so they
 * follow the user to another browser; `/api/index` keeps exactly SPEC §2's fields.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

/** The typefaces nobody here chose (issue 30): the defaults. */
const FONTS = { headingFont: "default", bodyFont: "default", monoFont: "default" };

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

describe("appearance preferences", () => {
  it("start at the defaults, change only the fields sent, and stay out of /api/index", async () => {
    const writer = await buildUser(server.url, "prefs");
    expect((await writer.get("/api/preferences")).body).toEqual({ theme: "forest", fontSize: 16, keys: {}, ...FONTS });
    const set = await writer.put("/api/preferences", { theme: "dark" });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ theme: "dark", fontSize: 16, keys: {}, ...FONTS });
    expect((await writer.put("/api/preferences", { fontSize: 20 })).body).toEqual({ theme: "dark", fontSize: 20, keys: {}, ...FONTS });
    expect((await writer.get("/api/preferences")).body).toEqual({ theme: "dark", fontSize: 20, keys: {}, ...FONTS });
    const me = await writer.get("/api/index");
    expect(Object.keys(me.body)).not.toContain("preferences");
  });

  it("are each user's own", async () => {
    const ada = await buildUser(server.url, "ada");
    const bob = await buildUser(server.url, "bob");
    await ada.put("/api/preferences", { theme: "light", fontSize: 22 });
    expect((await bob.get("/api/preferences")).body).toEqual({ theme: "forest", fontSize: 16, keys: {}, ...FONTS });
  });

  it("keep both of two changes sent at once", async () => {
    const writer = await buildUser(server.url, "race");
    const [a, b] = await Promise.all([writer.put("/api/preferences", { theme: "light" }), writer.put("/api/preferences", { fontSize: 14 })]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect((await writer.get("/api/preferences")).body).toEqual({ theme: "light", fontSize: 14, keys: {}, ...FONTS });
  });

  it("refuse an unknown value or field with 400 and details, changing nothing", async () => {
    const writer = await buildUser(server.url, "bad");
    await writer.put("/api/preferences", { theme: "light", fontSize: 18 });
    for (const [body, path] of [
      [{ theme: "neon" }, "theme"],
      [{ fontSize: 17 }, "fontSize"],
      [{ fontSize: "16" }, "fontSize"],
      [{ theme: "dark", colour: "red" }, ""],
      [{ theme: "dark", fontSize: 1e9 }, "fontSize"],
    ] as const) {
      const res = await writer.put("/api/preferences", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ error: "invalid_request" });
      expect(res.body.message).toEqual(expect.any(String));
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    const notJson = await writer.put("/api/preferences", "theme=dark", { "content-type": "application/json" });
    expect(notJson.status).toBe(400);
    const array = await writer.put("/api/preferences", ["dark"]);
    expect(array.status).toBe(400);
    expect((await writer.get("/api/preferences")).body).toEqual({ theme: "light", fontSize: 18, keys: {}, ...FONTS });
  });

  it("keep the user's own keyboard shortcuts, normalized, replaced whole, and {} back to the defaults", async () => {
    const writer = await buildUser(server.url, "keys");
    const set = await writer.put("/api/preferences", { keys: { "key:down": ["down", "N"], "modal:show:history": ["Ctrl+Alt+h"] } });
    expect(set.status).toBe(200);
    expect(set.body.keys).toEqual({ "key:down": ["down", "n"], "modal:show:history": ["ctrl+alt+h"] });
    // Another field leaves them be; keys given again replace them.
    expect((await writer.put("/api/preferences", { theme: "dark" })).body.keys).toEqual({ "key:down": ["down", "n"], "modal:show:history": ["ctrl+alt+h"] });
    expect((await writer.put("/api/preferences", { keys: { "key:up": [] } })).body.keys).toEqual({ "key:up": [] });
    expect((await writer.get("/api/preferences")).body).toEqual({ theme: "dark", fontSize: 16, keys: { "key:up": [] }, ...FONTS });
    expect((await writer.put("/api/preferences", { keys: {} })).body.keys).toEqual({});
  });

  it("refuse keys that clash, are not keys, or would be typed while editing, saying which, and change nothing", async () => {
    const writer = await buildUser(server.url, "clash");
    await writer.put("/api/preferences", { keys: { "key:down": ["down", "n"] } });
    for (const [keys, path, words] of [
      [{ "key:down": ["k"] }, "keys.key:down[0]", 'K is already the key of "Card above"'],
      [{ "key:down": ["down", "n"], "key:up": ["n"] }, "keys.key:up[0]", 'N is already the key of "Card below"'],
      [{ "key:save": ["s"] }, "keys.key:save[0]", "would be typed into the card"],
      [{ "key:down": ["g i"] }, "keys.key:down[0]", "is not a key"],
      [{ "key:down": ["hyper+x"] }, "keys.key:down[0]", "is not a key"],
      [{ "key:down": ["j", "J"] }, "keys.key:down[1]", "listed twice"],
      [{ "key:down": ["a", "b", "c", "d", "e", "f", "g"] }, "keys.key:down", ""],
      [{ "key:nothing": ["x"] }, "keys.key:nothing", "not an action"],
      [{ "key:copy": ["ctrl+shift+c"] }, "keys.key:copy", "cannot be rebound"],
      [{ "key:down": "j" }, "keys.key:down", ""],
    ] as const) {
      const res = await writer.put("/api/preferences", { keys });
      expect(res.status, JSON.stringify(keys)).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
      expect(res.body.message).toContain(words);
    }
    expect((await writer.get("/api/preferences")).body.keys).toEqual({ "key:down": ["down", "n"] });
  });

  it("answer anonymous callers 401 on both methods", async () => {
    const anon = new Api(server.url);
    const read = await anon.get("/api/preferences");
    expect(read.status).toBe(401);
    expect(read.body.error).toBe("unauthenticated");
    expect(read.headers.get("www-authenticate")).toMatch(/^Basic realm="cardtree"/);
    const write = await anon.put("/api/preferences", { theme: "dark" });
    expect(write.status).toBe(401);
    expect(write.body.error).toBe("unauthenticated");
  });

  it("need the CSRF token on a cookie session's change", async () => {
    const writer = await buildUser(server.url, "csrf");
    const login = await new Api(server.url).post("/api/login", writer.credentials);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    const anon = new Api(server.url);
    const refused = await anon.put("/api/preferences", { theme: "dark" }, { cookie });
    expect(refused.status).toBe(403);
    const accepted = await anon.put("/api/preferences", { theme: "dark" }, { cookie, "x-csrf-token": login.body.csrf });
    expect(accepted.status).toBe(200);
    expect((await writer.get("/api/preferences")).body.theme).toBe("dark");
  });
});
