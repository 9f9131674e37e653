import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser, uniqueEmail } from "../helpers/api.js";
import { startTestServer } from "../helpers/server.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
let anon: Api;
beforeAll(async () => {
  server = await startInProcessServer();
  anon = new Api(server.url);
});
afterAll(() => server.stop());

function sessionCookie(reply: { headers: Headers }): string {
  const cookie = reply.headers.get("set-cookie") ?? "";
  return cookie.split(";")[0];
}

describe("sign-up", () => {
  it("creates a user and answers the User record with exactly SPEC's fields", async () => {
    const email = uniqueEmail("New.Person").replace("new", "NEW");
    const res = await anon.post("/api/signup", { email, password: "long enough" });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(
      ["_id", "email", "limit", "hasBillingId", "createdAt", "treesCount", "cardsCount", "favoriteTrees",
        "randomIndex", "userHash", "offers", "csrf"].sort(),
    );
    expect(res.body._id).toMatch(/^[a-f0-9]{24}$/);
    expect(res.body.email).toBe(email.toLowerCase());
    expect(res.body).toMatchObject({ limit: -1, hasBillingId: false, treesCount: 0, cardsCount: 0, favoriteTrees: [], offers: {} });
    expect(res.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(res.body.randomIndex).toBeGreaterThanOrEqual(0);
    expect(res.body.randomIndex).toBeLessThan(100);
    expect(res.body.userHash).toMatch(/^[a-f0-9]+$/);
    expect(res.body.csrf).not.toBe("");
    expect(res.text).not.toMatch(/scrypt|password/i);
    const cookie = res.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
  });

  it("refuses a taken email with 409, whatever its case", async () => {
    const email = uniqueEmail();
    await anon.post("/api/signup", { email, password: "long enough" });
    const res = await anon.post("/api/signup", { email: email.toUpperCase(), password: "another one" });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe("conflict");
  });

  it("refuses a bad email or a short password with 400 and details", async () => {
    const bad = await anon.post("/api/signup", { email: "not-an-email", password: "long enough" });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: "invalid_request" });
    expect(bad.body.details[0].path).toBe("email");
    const short = await anon.post("/api/signup", { email: uniqueEmail(), password: "short" });
    expect(short.status).toBe(400);
    expect(short.body.details[0].path).toBe("password");
  });
});

describe("password length", () => {
  it("sign-up takes 8 to 1024 characters; 1025 is 400 with details", async () => {
    for (const password of ["12345678", "p".repeat(1024)]) {
      const ok = await anon.post("/api/signup", { email: uniqueEmail(), password });
      expect(ok.status, `${password.length} characters`).toBe(201);
    }
    const email = uniqueEmail();
    const long = await anon.post("/api/signup", { email, password: "p".repeat(1025) });
    expect(long.status).toBe(400);
    expect(long.body.error).toBe("invalid_request");
    expect(long.body.details[0].path).toBe("password");
    // Nothing was created: the same email signs up afterwards.
    expect((await anon.post("/api/signup", { email, password: "long enough" })).status).toBe(201);
  });

  it("a new password out of bounds is 400 on PUT /api/index and the old one keeps working", async () => {
    const alice = await buildUser(server.url);
    for (const newPassword of ["short", "p".repeat(1025)]) {
      const res = await alice.put("/api/index", { currentPassword: alice.credentials!.password, newPassword });
      expect(res.status, `${newPassword.length} characters`).toBe(400);
      expect(res.body.error).toBe("invalid_request");
      expect(res.body.details.map((d: any) => d.path)).toContain("newPassword");
    }
    expect((await alice.get("/api/index")).status).toBe(200);
  });
});

describe("sign-up when closed", () => {
  it("answers 403 with SIGNUP=off", async () => {
    const closed = await startTestServer({ env: { SIGNUP: "off", LOG: "off" } });
    try {
      const res = await new Api(closed.url).post("/api/signup", { email: uniqueEmail(), password: "long enough" });
      expect(res.status).toBe(403);
      expect(res.body.error).toBe("forbidden");
    } finally {
      await closed.stop();
    }
  });
});

describe("basic credentials", () => {
  it("answer GET /api/index with live counts and an empty csrf", async () => {
    const alice = await buildUser(server.url);
    await buildTree(alice, { seed: "# One\n\n## Two" });
    const res = await alice.get("/api/index");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ email: alice.user.email, treesCount: 1, cardsCount: 2, csrf: "" });
  });

  it("wrong password: 401 with the Basic challenge and the error body", async () => {
    const alice = await buildUser(server.url);
    const wrong = new Api(server.url, { email: alice.user.email, password: "wrong password" });
    const res = await wrong.get("/api/index");
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic realm="cardtree"/);
    expect(res.body).toEqual({ error: "unauthenticated", message: expect.any(String) });
  });

  it("no credentials: 401", async () => {
    const res = await anon.get("/api/index");
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("unauthenticated");
  });

  it("the browser client (X-Requested-With) gets no challenge header", async () => {
    const res = await anon.get("/api/index", { "x-requested-with": "XMLHttpRequest" });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBeNull();
  });

});

describe("cookie sessions", () => {
  it("log in, read, change with the CSRF token, log out", async () => {
    const alice = await buildUser(server.url);
    const login = await anon.post("/api/login", alice.credentials);
    expect(login.status).toBe(200);
    expect(login.body.email).toBe(alice.user.email);
    const cookie = sessionCookie(login);
    const csrf = login.body.csrf;
    expect(csrf).toBeTruthy();

    const index = await anon.get("/api/index", { cookie });
    expect(index.status).toBe(200);
    expect(index.body.csrf).toBe(csrf);

    const noToken = await anon.post("/api/trees", { name: "Nope" }, { cookie });
    expect(noToken.status).toBe(403);
    expect(noToken.body.error).toBe("forbidden");
    expect((await alice.get("/api/trees")).body).toHaveLength(0);

    const withToken = await anon.post("/api/trees", { name: "Yes" }, { cookie, "x-csrf-token": csrf });
    expect(withToken.status).toBe(201);

    const logout = await anon.post("/api/logout", undefined, { cookie, "x-csrf-token": csrf });
    expect(logout.status).toBe(204);
    expect((await anon.get("/api/index", { cookie })).status).toBe(401);
  });

  it("log-in and sign-up need no CSRF token even with an old session cookie", async () => {
    const alice = await buildUser(server.url);
    const first = await anon.post("/api/login", alice.credentials);
    const cookie = sessionCookie(first);
    const again = await anon.post("/api/login", alice.credentials, { cookie });
    expect(again.status).toBe(200);
    expect(again.body.csrf).not.toBe(first.body.csrf);
    const signup = await anon.post("/api/signup", { email: uniqueEmail(), password: "long enough" }, { cookie: sessionCookie(again) });
    expect(signup.status).toBe(201);
  });

  it("a wrong log-in answers 401 and starts no session", async () => {
    const alice = await buildUser(server.url);
    const res = await anon.post("/api/login", { email: alice.user.email, password: "not the password" });
    expect(res.status).toBe(401);
    expect(res.headers.get("set-cookie")).toBeNull();
  });
});

describe("PUT /api/index", () => {
  it("sets favourite trees, showing only trees the user can open", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const res = await alice.put("/api/index", { favoriteTrees: [tree._id, "zzzzzzzzzzzzzzzzzzzzzzzz"] });
    expect(res.status).toBe(200);
    expect(res.body.favoriteTrees).toEqual([tree._id]);
    expect((await alice.put("/api/index", { favoriteTrees: ["bad id"] })).status).toBe(400);
  });

  it("changes the password: the old one stops working on the very next request", async () => {
    const alice = await buildUser(server.url);
    expect((await alice.get("/api/index")).status).toBe(200);
    const wrong = await alice.put("/api/index", { currentPassword: "not it", newPassword: "a new password" });
    expect(wrong.status).toBe(403);
    const res = await alice.put("/api/index", { currentPassword: alice.credentials!.password, newPassword: "a new password" });
    expect(res.status).toBe(200);
    expect((await alice.get("/api/index")).status).toBe(401);
    const renewed = new Api(server.url, { email: alice.user.email, password: "a new password" });
    expect((await renewed.get("/api/index")).status).toBe(200);
  });
});

describe("card writes with basic credentials verified lately (confirmed under the tree's lock, issue 27)", () => {
  /** A user whose credentials this server verified and keeps, a tree of theirs with a card, and then a new password. */
  async function cachedThenChanged() {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    // Verified, then taken from the cache by the card writes.
    const card = (await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: "kept" })).body;
    expect((await alice.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "edited" })).status).toBe(200);
    expect((await alice.put("/api/index", { currentPassword: alice.credentials!.password, newPassword: "a new password" })).status).toBe(200);
    return { alice, tree, card, renewed: new Api(server.url, { email: alice.user.email, password: "a new password" }) };
  }

  const missingTree = "a".repeat(24);
  // Each with a log-in of its own: a refused one is forgotten, and the next request reads the user first again.
  const cases: [string, (f: Awaited<ReturnType<typeof cachedThenChanged>>) => Promise<{ status: number; body: any }>][] = [
    ["a create", ({ alice, tree }) => alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 2, content: "not written" })],
    ["an edit", ({ alice, tree, card }) => alice.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "not written" })],
    ["a deletion", ({ alice, tree, card }) => alice.delete(`/api/trees/${tree._id}/cards/${card._id}`)],
    // Writes that would not have been 2xx are 401 too.
    ["a create in no tree (404)", ({ alice }) => alice.post(`/api/trees/${missingTree}/cards`, { treeId: missingTree, position: 0 })],
    ["a body refused before the tree is read (422)", ({ alice, tree }) => alice.post(`/api/trees/${tree._id}/cards`, { treeId: missingTree, position: 0 })],
    [
      "a body that does not parse (400)",
      ({ alice, tree }) => alice.request("POST", `/api/trees/${tree._id}/cards`, "{not json", { "content-type": "application/json" }),
    ],
  ];
  for (const [what, send] of cases) {
    it(`refuse the old password after a change: ${what} is 401 and changes nothing`, async () => {
      const fixture = await cachedThenChanged();
      const refused = await send(fixture);
      expect(refused.status).toBe(401);
      expect(refused.body?.error).toBe("unauthenticated");
      const { renewed, tree, card } = fixture;
      const cards = (await renewed.get(`/api/trees/${tree._id}/cards`)).body;
      expect(cards.find((c: any) => c._id === card._id)?.content).toBe("edited");
      expect(cards.some((c: any) => c.content === "not written")).toBe(false);
      expect((await renewed.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 3, content: "new password" })).status).toBe(201);
    });
  }
});

describe("keyed card writes with basic credentials verified lately (issue 26: the key's user is confirmed too)", () => {
  /** A user whose credentials this server verified and keeps (a card write took them from the cache), and a tree of theirs. */
  async function cached() {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    expect((await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: "first" })).status).toBe(201);
    const renewed = new Api(server.url, { email: alice.user.email, password: "a new password" });
    const changePassword = async () =>
      expect((await alice.put("/api/index", { currentPassword: alice.credentials!.password, newPassword: "a new password" })).status).toBe(200);
    return { alice, tree, renewed, changePassword };
  }
  const keyed = (api: Api, treeId: string, key: string, content: string) =>
    api.request("POST", `/api/trees/${treeId}/cards`, { treeId, position: 5, content }, { "idempotency-key": key });
  const contents = async (api: Api, treeId: string) => (await api.get(`/api/trees/${treeId}/cards`)).body.map((c: any) => c.content);

  it("a keyed create with the old password is 401 and keeps nothing for its key: the same request with the new password runs", async () => {
    const { alice, tree, renewed, changePassword } = await cached();
    await changePassword();
    const refused = await keyed(alice, tree._id, "refused-then-run", "once");
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe("unauthenticated");
    const run = await keyed(renewed, tree._id, "refused-then-run", "once");
    expect(run.status).toBe(201);
    expect(run.headers.get("idempotent-replayed")).toBeNull();
    expect(await contents(renewed, tree._id)).toEqual(["", "first", "once"]);
  });

  it("a key answered before a password change is not replayed to the old password, nor refused to it with 422; the new one gets the replay", async () => {
    const { alice, tree, renewed, changePassword } = await cached();
    const made = await keyed(alice, tree._id, "answered-before", "made once");
    expect(made.status).toBe(201);
    await changePassword();
    const replayToOld = await keyed(alice, tree._id, "answered-before", "made once");
    expect(replayToOld.status).toBe(401);
    expect(replayToOld.body.error).toBe("unauthenticated");
    expect(replayToOld.headers.get("idempotent-replayed")).toBeNull();
    expect((await keyed(alice, tree._id, "answered-before", "another body")).status).toBe(401);
    const replay = await keyed(renewed, tree._id, "answered-before", "made once");
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(made.body);
    expect(await contents(renewed, tree._id)).toEqual(["", "first", "made once"]);
  });
});

describe("a password change from a cookie session", () => {
  it("keeps that session and ends the user's other sessions", async () => {
    const alice = await buildUser(server.url);
    const mine = await anon.post("/api/login", alice.credentials);
    const other = await anon.post("/api/login", alice.credentials);
    const cookie = sessionCookie(mine);
    const change = await anon.put(
      "/api/index",
      { currentPassword: alice.credentials!.password, newPassword: "changed in the browser" },
      { cookie, "x-csrf-token": mine.body.csrf },
    );
    expect(change.status).toBe(200);
    expect((await anon.get("/api/index", { cookie })).status).toBe(200);
    expect((await anon.get("/api/index", { cookie: sessionCookie(other) })).status).toBe(401);
  });
});

describe("brute-force limit", () => {
  // Its own server: the limit also counts failures per address, and every test here
  // calls from 127.0.0.1.
  it("ten failed log-ins for one email from one address answer 429 with Retry-After, even with a right password never verified", async () => {
    const own = await startTestServer({ env: { LOG: "off" } });
    try {
      const alice = await buildUser(own.url);
      const wrong = new Api(own.url, { email: alice.user.email, password: "wrong password" });
      for (let i = 0; i < 10; i++) expect((await wrong.get("/api/index")).status).toBe(401);
      const blocked = await alice.get("/api/index");
      expect(blocked.status).toBe(429);
      expect(blocked.body.error).toBe("too_many_requests");
      expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
      const login = await new Api(own.url).post("/api/login", alice.credentials);
      expect(login.status).toBe(429);
    } finally {
      await own.stop();
    }
  });
});
