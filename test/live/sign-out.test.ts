/**
 * Live streams end with the credentials they were opened with (issue 14): a cookie
 * session's SSE stream and GraphQL subscription end when that session logs out; every
 * stream of a user ends when their password changes (basic credentials with the old
 * password and other sessions no longer authenticate), but those of the session that made
 * the change go on. Over real HTTP, with real cookies.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildCard, buildTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { SseReader } from "./sse-client.js";

let server: InProcessServer;
// Each test has a user and a tree of its own (\`freshOwner\`): one of them changes the password.
let owner: Api & { user: any };
let tree: any;

beforeAll(async () => {
  server = await startInProcessServer({ LIVE_HEARTBEAT_MS: "200" });
});
afterAll(() => server.stop());

async function freshOwner(name: string): Promise<void> {
  owner = await buildUser(server.url, name);
  tree = await buildTree(owner, { name: "Followed", seed: "# Root" });
}

interface CookieSession {
  cookie: string;
  csrf: string;
}

async function logIn(password = "correct horse battery"): Promise<CookieSession> {
  const res = await fetch(`${server.url}/api/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: owner.user.email, password }),
  });
  expect(res.status).toBe(200);
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith("cardtree_session="))!.split(";")[0];
  return { cookie, csrf: (await res.json()).csrf };
}

function follow(headers: Record<string, string>): Promise<SseReader> {
  return SseReader.open(server.url, `/api/trees/${tree._id}/events`, headers);
}

function subscribe(session: CookieSession): Promise<SseReader> {
  return SseReader.open(
    server.url,
    "/graphql",
    { accept: "text/event-stream", "content-type": "application/json", cookie: session.cookie, "x-csrf-token": session.csrf },
    "POST",
    JSON.stringify({ query: `subscription ($t: ID!) { treeChanged(treeId: $t) { revision kind } }`, variables: { t: tree._id } }),
  );
}

it("logging out ends that session's streams, and only theirs", async () => {
  await freshOwner("signout");
  const leaving = await logIn();
  const staying = await logIn();
  const leavingEvents = await follow({ cookie: leaving.cookie });
  const leavingSubscription = await subscribe(leaving);
  const stayingEvents = await follow({ cookie: staying.cookie });
  const basicEvents = await follow({ authorization: owner.authHeader! });
  for (const reader of [leavingEvents, leavingSubscription, stayingEvents, basicEvents]) expect(reader.status).toBe(200);

  await buildCard(owner, tree._id, { content: "before logout" });
  await leavingEvents.waitFor(1);
  await leavingSubscription.waitFor(1, "next");

  const out = await fetch(`${server.url}/api/logout`, { method: "POST", headers: { cookie: leaving.cookie, "x-csrf-token": leaving.csrf } });
  expect(out.status).toBe(204);
  await leavingEvents.waitForEnd(2000);
  await leavingSubscription.waitForEnd(2000);

  await buildCard(owner, tree._id, { content: "after logout" });
  expect((await stayingEvents.waitFor(2)).map((e) => e.cards[0].content)).toEqual(["before logout", "after logout"]);
  expect((await basicEvents.waitFor(2)).map((e) => e.cards[0].content)).toEqual(["before logout", "after logout"]);
  // The one that left saw nothing after its logout.
  expect(leavingEvents.data().map((e) => e.cards[0].content)).toEqual(["before logout"]);
  expect(leavingSubscription.data("next")).toHaveLength(1);
  // And cannot open another with the same cookie: the tree is private, the caller now anonymous.
  expect((await follow({ cookie: leaving.cookie })).status).toBe(401);
  for (const reader of [stayingEvents, basicEvents]) reader.close();
});

it("a password change ends the user's other streams, basic ones included, and keeps the changer's", async () => {
  await freshOwner("password");
  const changer = await logIn();
  const other = await logIn();
  const changerEvents = await follow({ cookie: changer.cookie });
  const otherEvents = await follow({ cookie: other.cookie });
  const otherSubscription = await subscribe(other);
  const basicEvents = await follow({ authorization: owner.authHeader! });
  for (const reader of [changerEvents, otherEvents, otherSubscription, basicEvents]) expect(reader.status).toBe(200);

  const changed = await fetch(`${server.url}/api/index`, {
    method: "PUT",
    headers: { "content-type": "application/json", cookie: changer.cookie, "x-csrf-token": changer.csrf },
    body: JSON.stringify({ currentPassword: "correct horse battery", newPassword: "a brand new passphrase" }),
  });
  expect(changed.status).toBe(200);
  await otherEvents.waitForEnd(2000);
  await otherSubscription.waitForEnd(2000);
  await basicEvents.waitForEnd(2000);

  const card = await fetch(`${server.url}/api/trees/${tree._id}/cards`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie: changer.cookie, "x-csrf-token": changer.csrf },
    body: JSON.stringify({ treeId: tree._id, content: "after the change", position: 9 }),
  });
  expect(card.status).toBe(201);
  expect((await changerEvents.waitFor(1)).map((e) => e.cards[0].content)).toEqual(["after the change"]);
  expect(changerEvents.ended).toBe(false);
  expect(otherEvents.data()).toEqual([]);
  changerEvents.close();
});
