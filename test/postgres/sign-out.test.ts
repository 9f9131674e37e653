/**
 * Sign-outs cross processes (issue 25): two server processes on one PostgreSQL database.
 * A logout, a password change or the operator's `user passwd` (the CLI, a third process)
 * made through one ends that user's live streams on the other, SSE and the GraphQL
 * subscription, and only those the sign-out is about. And the other way round: credentials
 * verified through one process pass the log-in throttle on the other (issue 25).
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { createTestDatabase } from "../helpers/postgres.js";
import { CLI_ARGS, startTestServer, type TestServer } from "../helpers/server.js";
import { SseReader } from "../live/sse-client.js";

let databaseUrl: string;
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  const env = { STORE: "postgres", DATABASE_URL: databaseUrl, LIVE_HEARTBEAT_MS: "200" };
  [a, b] = await Promise.all([startTestServer({ env }), startTestServer({ env })]);
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

interface CookieSession {
  cookie: string;
  csrf: string;
}

async function logIn(server: TestServer, credentials: { email: string; password: string }): Promise<CookieSession> {
  const res = await fetch(`${server.url}/api/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(credentials) });
  expect(res.status).toBe(200);
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith("cardtree_session="))!.split(";")[0];
  return { cookie, csrf: (await res.json()).csrf };
}

const follow = (server: TestServer, treeId: string, headers: Record<string, string>) =>
  SseReader.open(server.url, `/api/trees/${treeId}/events`, headers);

const subscribe = (server: TestServer, treeId: string, session: CookieSession) =>
  SseReader.open(
    server.url,
    "/graphql",
    { accept: "text/event-stream", "content-type": "application/json", cookie: session.cookie, "x-csrf-token": session.csrf },
    "POST",
    JSON.stringify({ query: `subscription ($t: ID!) { treeChanged(treeId: $t) { revision } }`, variables: { t: treeId } }),
  );


describe("sign-outs on one process end the streams on the other", { timeout: 60_000 }, () => {
  it("a logout on A ends that session's streams on B, and only theirs", async () => {
    const owner = await buildUser(a.url, "logout");
    const tree = await buildTree(owner, { name: "Followed on B" });
    const leaving = await logIn(a, owner.credentials!);
    const staying = await logIn(a, owner.credentials!);
    const leavingEvents = await follow(b, tree._id, { cookie: leaving.cookie });
    const leavingSubscription = await subscribe(b, tree._id, leaving);
    const stayingEvents = await follow(b, tree._id, { cookie: staying.cookie });
    for (const reader of [leavingEvents, leavingSubscription, stayingEvents]) expect(reader.status).toBe(200);
    await buildCard(owner, tree._id, { content: "before" });
    await leavingEvents.waitFor(1);
    await leavingSubscription.waitFor(1, "next");

    const out = await fetch(`${a.url}/api/logout`, { method: "POST", headers: { cookie: leaving.cookie, "x-csrf-token": leaving.csrf } });
    expect(out.status).toBe(204);
    await leavingEvents.waitForEnd(3000);
    await leavingSubscription.waitForEnd(3000);

    await buildCard(owner, tree._id, { content: "after" });
    expect((await stayingEvents.waitFor(2)).map((e) => e.cards[0].content)).toEqual(["before", "after"]);
    expect(stayingEvents.ended).toBe(false);
    expect(leavingEvents.data().map((e) => e.cards[0].content)).toEqual(["before"]);
    stayingEvents.close();
  });

  it("a password change on A ends the user's other streams on B, basic ones included, and keeps the changer's", async () => {
    const owner = await buildUser(a.url, "passwd");
    const bystander = await buildUser(a.url, "bystander");
    const tree = await buildTree(owner, { name: "Changed on A" });
    expect((await owner.post(`/api/trees/${tree._id}/collaborators`, { email: bystander.credentials!.email })).status).toBe(201);
    const changer = await logIn(a, owner.credentials!);
    const other = await logIn(b, owner.credentials!);
    const changerOnB = await follow(b, tree._id, { cookie: changer.cookie });
    const otherEvents = await follow(b, tree._id, { cookie: other.cookie });
    const otherSubscription = await subscribe(b, tree._id, other);
    const basicOnB = await follow(b, tree._id, { authorization: owner.authHeader! });
    const bystanderOnB = await follow(b, tree._id, { authorization: bystander.authHeader! });
    const readers = [changerOnB, otherEvents, otherSubscription, basicOnB, bystanderOnB];
    for (const reader of readers) expect(reader.status).toBe(200);
    await buildCard(owner, tree._id, { content: "before" });
    for (const reader of readers) await reader.waitFor(1, reader === otherSubscription ? "next" : "change");

    const changed = await fetch(`${a.url}/api/index`, {
      method: "PUT",
      headers: { "content-type": "application/json", cookie: changer.cookie, "x-csrf-token": changer.csrf },
      body: JSON.stringify({ currentPassword: owner.credentials!.password, newPassword: "a brand new passphrase" }),
    });
    expect(changed.status).toBe(200);
    await otherEvents.waitForEnd(3000);
    await otherSubscription.waitForEnd(3000);
    await basicOnB.waitForEnd(3000);

    await buildCard(bystander, tree._id, { content: "after" });
    expect((await changerOnB.waitFor(2)).map((e) => e.cards[0].content)).toEqual(["before", "after"]);
    expect((await bystanderOnB.waitFor(2)).map((e) => e.cards[0].content)).toEqual(["before", "after"]);
    expect(changerOnB.ended).toBe(false);
    expect(bystanderOnB.ended).toBe(false);
    changerOnB.close();
    bystanderOnB.close();
  });

  it("the operator's `user passwd` (the CLI) ends the user's streams on both servers", async () => {
    const owner = await buildUser(a.url, "operator");
    const tree = await buildTree(owner, { name: "Reset by the operator" });
    const session = await logIn(a, owner.credentials!);
    const readers = [
      await follow(a, tree._id, { cookie: session.cookie }),
      await follow(b, tree._id, { cookie: session.cookie }),
      await follow(a, tree._id, { authorization: owner.authHeader! }),
      await follow(b, tree._id, { authorization: owner.authHeader! }),
    ];
    for (const reader of readers) expect(reader.status).toBe(200);
    await buildCard(owner, tree._id, { content: "before" });
    for (const reader of readers) await reader.waitFor(1);

    await promisify(execFile)(
      process.execPath,
      [...CLI_ARGS, "user", "passwd", owner.credentials!.email, "--password", "set by the operator"],
      { cwd: path.resolve(import.meta.dirname, "../.."), env: { ...process.env, STORE: "postgres", DATABASE_URL: databaseUrl } },
    );
    for (const reader of readers) await reader.waitForEnd(3000);
    // The new password works on both.
    const renewed = new Api(b.url, { email: owner.credentials!.email, password: "set by the operator" });
    expect((await renewed.get("/api/index")).status).toBe(200);
  });
});

describe("credentials verified on one process pass the other's log-in throttle", { timeout: 60_000 }, () => {
  it("a user who logged in on A still logs in on B while their account is attacked there; a never-verified one waits", async () => {
    const verified = await buildUser(a.url, "verified");
    const unverified = await buildUser(a.url, "unverified");
    expect((await new Api(a.url).post("/api/login", verified.credentials)).status).toBe(200);
    for (const user of [verified, unverified]) {
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++) statuses.push((await new Api(b.url).post("/api/login", { email: user.credentials!.email, password: `a wrong guess ${i}` })).status);
      expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
      expect(statuses[10]).toBe(429);
    }
    expect((await new Api(b.url).post("/api/login", verified.credentials)).status).toBe(200);
    expect((await new Api(b.url, verified.credentials).get("/api/index")).status).toBe(200);
    expect((await new Api(b.url).post("/api/login", unverified.credentials)).status).toBe(429);
  });
});

