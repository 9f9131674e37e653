/**
 * Auth hardening (issue 7.5): the brute-force limit is answered before any scrypt work and
 * a flood cannot starve a good user; unknown emails cost the same work as known ones;
 * revoking access or changing a password bites on the very next request despite the
 * credential cache; cookies, CSRF (REST and GraphQL) and security headers; no secret in
 * the logs.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser, uniqueEmail } from "../helpers/api.js";
import { instanceSecret } from "../helpers/postgres.js";
import { startTestServer } from "../helpers/server.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
let hashChecks = 0;
beforeAll(async () => {
  // Hashes at the production cost (not the suite's cheap one, vitest.config.ts): what the
  // throttles spare is hashing that takes a while.
  server = await startInProcessServer({ TRUST_PROXY: "1", PASSWORD_HASH_COST: "14" });
  // Count scrypt verifications on the real hasher (no stand-in: the work still happens).
  // A call the hasher's line refuses (429) computes no hash and is not counted.
  const hasher = server.ctx.hasher;
  const verify = hasher.verify.bind(hasher);
  hasher.verify = async (...args: Parameters<typeof verify>) => {
    const verdict = await verify(...args);
    hashChecks++;
    return verdict;
  };
}, 60_000);
afterAll(() => server.stop());

const basic = (email: string, password: string) => `Basic ${Buffer.from(`${email}:${password}`).toString("base64")}`;
const from = (address: string) => ({ "x-forwarded-for": address });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

describe("brute force", () => {
  it("200 quick bad attempts are answered 429 without hashing, while a good user gets in fast", async () => {
    const victim = await buildUser(server.url, "victim");
    const good = await buildUser(server.url, "good");
    // What one log-in costs on this machine right now, with nobody else hashing.
    const quiet = performance.now();
    const baseline = await buildUser(server.url, "baseline");
    expect((await baseline.post("/api/login", baseline.credentials, from("198.51.100.6"))).status).toBe(200);
    const quietMs = performance.now() - quiet;
    const before = hashChecks;
    const attacker = new Api(server.url);
    const statuses: number[] = [];
    const flood = (async () => {
      for (let round = 0; round < 10; round++) {
        const replies = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            attacker.get("/api/index", { authorization: basic(victim.credentials!.email, `guess ${round}-${i}`), ...from("203.0.113.9") }),
          ),
        );
        statuses.push(...replies.map((r) => r.status));
      }
    })();
    const started = performance.now();
    const goodReply = await good.post("/api/login", good.credentials, from("198.51.100.7"));
    const goodMs = performance.now() - started;
    await flood;
    expect(goodReply.status).toBe(200);
    // Behind at most the limit's worth of hashes, four at a time: a few log-ins' time.
    expect(goodMs).toBeLessThan(6 * quietMs + 300);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(170);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    // Only the first window's worth of guesses cost a hash (checks in flight count), plus
    // the good user's one.
    expect(hashChecks - before).toBeLessThanOrEqual(10 + 1);
    const late = await attacker.get("/api/index", { authorization: basic(victim.credentials!.email, "wrong guess"), ...from("203.0.113.9") });
    expect(late.status).toBe(429);
    expect(Number(late.headers.get("retry-after"))).toBeGreaterThan(0);
  }, 60_000);

  it("parallel identical checks share one hash, and still each count as an attempt", async () => {
    const carol = await buildUser(server.url, "carol");
    const before = hashChecks;
    const replies = await Promise.all(Array.from({ length: 16 }, () => carol.get("/api/index", from("192.0.2.200"))));
    expect(replies.map((r) => r.status)).toEqual(Array(16).fill(200));
    expect(hashChecks - before).toBe(1);
    const guesses = await Promise.all(
      Array.from({ length: 12 }, () => new Api(server.url, { email: carol.credentials!.email, password: "same guess" }).get("/api/index", from("192.0.2.201"))),
    );
    expect(guesses.map((r) => r.status)).toEqual(Array(12).fill(401));
    // Twelve failures for carol from that address: a thirteenth guess from there is refused;
    // carol herself, verified, is not.
    const another = new Api(server.url, { email: carol.credentials!.email, password: "another guess" });
    expect((await another.get("/api/index", from("192.0.2.201"))).status).toBe(429);
    expect((await carol.get("/api/index", from("192.0.2.201"))).status).toBe(200);
  });

  it("an unknown email costs one hash, like a known one, and takes comparable time", async () => {
    const known = await buildUser(server.url, "known");
    const times = { known: [] as number[], unknown: [] as number[] };
    for (let i = 0; i < 7; i++) {
      for (const kind of ["known", "unknown"] as const) {
        const email = kind === "known" ? known.credentials!.email : uniqueEmail("nobody");
        const before = hashChecks;
        const started = performance.now();
        const res = await new Api(server.url).post("/api/login", { email, password: "not the password" }, from(`192.0.2.${i * 2 + (kind === "known" ? 1 : 2)}`));
        times[kind].push(performance.now() - started);
        expect(res.status).toBe(401);
        expect(hashChecks - before, kind).toBe(1);
      }
    }
    const ratio = median(times.unknown) / median(times.known);
    expect(ratio).toBeGreaterThan(0.4);
    expect(ratio).toBeLessThan(2.5);
  }, 60_000);
});

describe("revocation despite the credential cache", () => {
  it("a removed collaborator loses the tree on the very next request", async () => {
    const alice = await buildUser(server.url, "alice");
    const bob = await buildUser(server.url, "bob");
    const tree = await buildTree(alice, { name: "shared then not" });
    await alice.post(`/api/trees/${tree._id}/collaborators`, { email: bob.user.email });
    expect((await bob.get(`/api/trees/${tree._id}/cards`)).status).toBe(200);
    expect((await alice.delete(`/api/trees/${tree._id}/collaborators/${bob.user._id}`)).status).toBe(204);
    const after = await bob.get(`/api/trees/${tree._id}/cards`);
    expect(after.status).toBe(404);
    expect(after.text).not.toContain("shared then not");
  });

  it("a changed password ends the old basic credentials and other cookie sessions at once", async () => {
    const alice = await buildUser(server.url, "alice");
    expect((await alice.get("/api/index")).status).toBe(200);
    const other = await new Api(server.url).post("/api/login", alice.credentials);
    const cookie = (other.headers.get("set-cookie") ?? "").split(";")[0];
    expect((await new Api(server.url).get("/api/index", { cookie })).status).toBe(200);
    const change = await alice.put("/api/index", { currentPassword: alice.credentials!.password, newPassword: "a brand new password" });
    expect(change.status).toBe(200);
    expect((await alice.get("/api/index")).status).toBe(401);
    expect((await new Api(server.url).get("/api/index", { cookie })).status).toBe(401);
    expect((await new Api(server.url, { email: alice.credentials!.email, password: "a brand new password" }).get("/api/index")).status).toBe(200);
  });
});

describe("one kept-alive connection, several callers", () => {
  // A proxy that keeps its upstream connections open sends many users' requests down one;
  // what the server remembers of the last credentials on a connection must never answer
  // for the next request's (src/auth/per-connection.ts).
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  afterAll(() => agent.destroy());
  const ports = new Set<number>();
  const index = (headers: Record<string, string>) =>
    new Promise<{ status: number; email?: string }>((resolve, reject) => {
      const req = http.get(`${server.url}/api/index`, { agent, headers }, (res) => {
        ports.add(res.socket.localPort!);
        let text = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, email: res.statusCode === 200 ? (JSON.parse(text) as { email: string }).email : undefined }));
      });
      req.on("error", reject);
    });

  it("answers each request for its own Basic credentials or session cookie", async () => {
    const alice = await buildUser(server.url, "alice");
    const bob = await buildUser(server.url, "bob");
    const [a, b] = [alice.credentials!, bob.credentials!];
    const asAlice = { authorization: basic(a.email, a.password) };
    expect(await index(asAlice)).toEqual({ status: 200, email: a.email });
    expect(await index(asAlice)).toEqual({ status: 200, email: a.email });
    expect((await index({ authorization: basic(a.email, "not the password") })).status).toBe(401);
    expect((await index({ authorization: basic(a.email, `${a.password} `) })).status).toBe(401);
    expect(await index({ authorization: basic(b.email, b.password) })).toEqual({ status: 200, email: b.email });
    expect(await index(asAlice)).toEqual({ status: 200, email: a.email });

    const cookieOf = async (credentials: { email: string; password: string }) =>
      ((await new Api(server.url).post("/api/login", credentials)).headers.get("set-cookie") ?? "").split(";")[0];
    const [aliceCookie, bobCookie] = [await cookieOf(a), await cookieOf(b)];
    expect(await index({ cookie: aliceCookie })).toEqual({ status: 200, email: a.email });
    expect(await index({ cookie: bobCookie })).toEqual({ status: 200, email: b.email });
    expect(await index({ cookie: aliceCookie })).toEqual({ status: 200, email: a.email });
    // Logged out elsewhere: the same cookie on the same connection is nobody's now.
    const out = await new Api(server.url).post("/api/logout", {}, { cookie: aliceCookie, "x-csrf-token": (await new Api(server.url).get("/api/index", { cookie: aliceCookie })).body.csrf });
    expect(out.status).toBeLessThan(300);
    expect((await index({ cookie: aliceCookie })).status).toBe(401);
    expect(await index({ cookie: bobCookie })).toEqual({ status: 200, email: b.email });
    // All of it went down one connection.
    expect(ports.size).toBe(1);
  });
});

describe("cookies, CSRF and headers", () => {
  const login = async (headers: Record<string, string> = {}) => {
    const user = await buildUser(server.url);
    const res = await new Api(server.url).post("/api/login", user.credentials, headers);
    return { res, cookie: (res.headers.get("set-cookie") ?? "").split(";")[0], csrf: res.body.csrf as string };
  };

  it("the session cookie is HttpOnly and SameSite, and Secure behind an HTTPS proxy", async () => {
    const plain = (await login()).res.headers.get("set-cookie")!;
    expect(plain).toMatch(/HttpOnly/i);
    expect(plain).toMatch(/SameSite=Lax/i);
    expect(plain).not.toMatch(/Secure/i);
    const proxied = await login({ "x-forwarded-proto": "https" });
    expect(proxied.res.headers.get("set-cookie")).toMatch(/;\s*Secure/i);
    expect(proxied.res.headers.get("strict-transport-security")).toMatch(/max-age=\d+/);
  });

  it("a cookie-session write needs the session's X-CSRF-Token, on REST and on GraphQL", async () => {
    const { cookie, csrf } = await login();
    const api = new Api(server.url);
    expect((await api.post("/api/trees", { name: "forged" }, { cookie })).status).toBe(403);
    expect((await api.post("/api/trees", { name: "forged" }, { cookie, "x-csrf-token": "x".repeat(csrf.length) })).status).toBe(403);
    const mutation = { query: 'mutation { createTree(input: {name: "forged"}) { id } }' };
    expect((await api.post("/graphql", mutation, { cookie })).status).toBe(403);
    // A mutation cannot ride a GET either (no token is checked on GET).
    const viaGet = await api.get(`/graphql?query=${encodeURIComponent(mutation.query)}`, { cookie, accept: "application/json" });
    expect(viaGet.status).toBeGreaterThanOrEqual(400);
    expect((await api.get("/api/trees", { cookie })).body).toEqual([]);
    expect((await api.post("/api/trees", { name: "real" }, { cookie, "x-csrf-token": csrf })).status).toBe(201);
    expect((await api.post("/graphql", { query: 'mutation { createTree(input: {name: "real too"}) { id } }' }, { cookie, "x-csrf-token": csrf })).status).toBe(200);
    expect((await api.get("/api/trees", { cookie })).body.map((t: any) => t.name).sort()).toEqual(["real", "real too"]);
  });

  it("a browser request from another site that would change something is refused, even with basic credentials", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "target" });
    for (const site of ["cross-site", "same-site"]) {
      const forged = await alice.post(`/api/trees/${tree._id}/clone`, undefined, { "sec-fetch-site": site });
      expect(forged.status, site).toBe(403);
    }
    expect((await alice.get("/api/trees", { "sec-fetch-site": "cross-site" })).body).toHaveLength(1);
    expect((await alice.post(`/api/trees/${tree._id}/clone`, undefined, { "sec-fetch-site": "same-origin" })).status).toBe(201);
  });

  it("every page carries the security headers, and the client's page fits its CSP", async () => {
    const page = await new Api(server.url).get("/");
    expect(page.status).toBe(200);
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    // script-src 'self' allows no inline script: every script must come from a file.
    const scripts = [...page.text.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/gi)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [tag, inline] of scripts) {
      expect(tag).toMatch(/src="\//);
      expect(inline.trim()).toBe("");
    }
    for (const p of ["/api/index", "/graphql", "/healthz", "/trees/abc"]) {
      expect((await new Api(server.url).get(p)).headers.get("content-security-policy"), p).toBe(csp);
    }
  });
});

describe("logs", () => {
  it("never contain a password, a basic-auth header or a session token", async () => {
    const logged = await startTestServer({ env: { LOG: "on" } });
    try {
      const password = "Sw0rdfish-in-the-logs?";
      const email = uniqueEmail("logged");
      const signup = await new Api(logged.url).post("/api/signup", { email, password });
      expect(signup.status).toBe(201);
      const token = (signup.headers.get("set-cookie") ?? "").split(";")[0].split("=")[1];
      const api = new Api(logged.url, { email, password });
      await api.get("/api/index");
      await new Api(logged.url).post("/api/login", { email, password: `${password}-wrong` });
      await new Api(logged.url).post("/api/login", { email, password });
      await api.put("/api/index", { currentPassword: "nope nope nope", newPassword: "another secret 123" });
      await new Api(logged.url).post("/api/login", "{broken json " + password, { "content-type": "application/json" });
      await new Api(logged.url).get(`/api/index?password=${encodeURIComponent(password)}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const out = logged.output.join("\n");
      expect(out).toContain('"message":"request"');
      for (const secret of [password, "another secret 123", api.authHeader!.slice(6), token]) {
        expect(out).not.toContain(secret);
      }
      expect(out).not.toContain(await instanceSecret(logged.dataDir));
    } finally {
      await logged.stop();
    }
  }, 60_000);
});
