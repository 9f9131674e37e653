/**
 * Sessions end when they should (issue 25): a cookie session's live streams (SSE and the
 * GraphQL subscription) end at the session's `expiresAt` by themselves, without waiting for
 * the expired cookie to come back; streams on basic credentials go on. Expired sessions are
 * deleted from the store on a timer, on either store. Real server, real HTTP, real cookies.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildCard, buildTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { SseReader } from "../live/sse-client.js";

const TTL_MS = 5000;
let server: InProcessServer;
let owner: Api & { user: any };
let tree: any;

beforeAll(async () => {
  server = await startInProcessServer({ SESSION_TTL_MS: String(TTL_MS), SESSION_SWEEP_MS: "200", LIVE_HEARTBEAT_MS: "200" });
  owner = await buildUser(server.url, "expiry");
  tree = await buildTree(owner, { name: "Followed", seed: "# Root" });
  // Once before the clock matters: the first stream loads the OpenAPI checker, the first
  // GraphQL request the schema.
  (await SseReader.open(server.url, `/api/trees/${tree._id}/events`, { authorization: owner.authHeader! })).close();
  expect((await owner.post("/graphql", { query: "{ me { email } }" })).status).toBe(200);
});
afterAll(() => server.stop());

async function logIn(): Promise<{ cookie: string; csrf: string; at: number }> {
  // Before the request: the session starts after this, so it cannot end sooner than TTL_MS from here.
  const at = Date.now();
  const res = await fetch(`${server.url}/api/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(owner.credentials),
  });
  expect(res.status).toBe(200);
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith("cardtree_session="))!;
  // The cookie says how long the session lasts, as the server keeps it.
  expect(cookie).toMatch(new RegExp(`Max-Age=${TTL_MS / 1000}\\b`));
  return { cookie: cookie.split(";")[0], csrf: (await res.json()).csrf, at };
}

it("ends a cookie session's streams at its expiry, with no request needed, and leaves basic ones open", async () => {
  const session = await logIn();
  const events = await SseReader.open(server.url, `/api/trees/${tree._id}/events`, { cookie: session.cookie });
  const subscription = await SseReader.open(
    server.url,
    "/graphql",
    { accept: "text/event-stream", "content-type": "application/json", cookie: session.cookie, "x-csrf-token": session.csrf },
    "POST",
    JSON.stringify({ query: `subscription ($t: ID!) { treeChanged(treeId: $t) { revision } }`, variables: { t: tree._id } }),
  );
  const basic = await SseReader.open(server.url, `/api/trees/${tree._id}/events`, { authorization: owner.authHeader! });
  for (const reader of [events, subscription, basic]) expect(reader.status).toBe(200);

  await buildCard(owner, tree._id, { content: "while the session lasts" });
  expect(await events.waitFor(1)).toHaveLength(1);
  expect(await subscription.waitFor(1, "next")).toHaveLength(1);
  expect(events.ended).toBe(false);

  await events.waitForEnd(TTL_MS + 3000);
  await subscription.waitForEnd(3000);
  // Not before the session's end, give or take the clocks' milliseconds (the heartbeat every 200 ms keeps an idle stream open).
  expect(Date.now() - session.at).toBeGreaterThanOrEqual(TTL_MS - 50);

  await buildCard(owner, tree._id, { content: "after the session ended" });
  expect((await basic.waitFor(2)).map((e) => e.cards[0].content)).toEqual(["while the session lasts", "after the session ended"]);
  expect(basic.ended).toBe(false);
  // The expired cookie opens nothing: the caller is anonymous, the tree private.
  expect((await SseReader.open(server.url, `/api/trees/${tree._id}/events`, { cookie: session.cookie })).status).toBe(401);
  basic.close();
});

it("deletes expired sessions from the store on its timer, and only those", async () => {
  const { sessions } = server.ctx.store;
  const userId = owner.user._id;
  const expired = { _id: "e".repeat(64), userId, csrf: "x", createdAt: "2026-01-01T00:00:00.000Z", expiresAt: "2026-01-02T00:00:00.000Z" };
  const fresh = { _id: "f".repeat(64), userId, csrf: "y", createdAt: new Date().toISOString(), expiresAt: "2999-01-01T00:00:00.000Z" };
  await sessions.insert(expired);
  await sessions.insert(fresh);
  const deadline = Date.now() + 5000;
  while ((await sessions.byId(expired._id)) !== null) {
    if (Date.now() > deadline) throw new Error("the expired session was not swept within 5 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(await sessions.byId(fresh._id)).toMatchObject({ _id: fresh._id, userId });
});

it("a session read lately is refused once it has expired, though the hourly sweep has not removed it yet", async ({ onTestFinished }) => {
  // The embedded store answers a session it read lately from memory (Store.instant); the
  // expiry must hold there too, not only once the sweep (an hour by default) deletes it.
  const short = await startInProcessServer({ SESSION_TTL_MS: "1500" });
  onTestFinished(() => short.stop());
  const writer = await buildUser(short.url, "expires-from-memory");
  const res = await fetch(`${short.url}/api/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(writer.credentials) });
  expect(res.status).toBe(200);
  const cookie = res.headers.getSetCookie()[0].split(";")[0];
  for (let i = 0; i < 2; i++) expect((await fetch(`${short.url}/api/index`, { headers: { cookie } })).status).toBe(200);
  await new Promise((resolve) => setTimeout(resolve, 1_700));
  expect((await fetch(`${short.url}/api/index`, { headers: { cookie } })).status).toBe(401);
});

