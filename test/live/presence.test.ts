/**
 * Presence over HTTP (SPEC §8 "Together", issue 30): collaborators see who has the tree open
 * and on which card, a closed stream is gone at once and a silent tab within 5 s, nobody
 * else may watch or be shown (401 anonymous, 404 others), a collaborator taken off the tree
 * disappears and is cut off, and none of it is a change (the tree's revision and history do
 * not move). The two-process case is test/postgres/presence.test.ts.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildSharedTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { SseReader } from "./sse-client.js";

let server: InProcessServer;
let alice: Api & { user: any };
let bob: Api & { user: any };
let tree: any;
let root: any;

beforeAll(async () => {
  server = await startInProcessServer({ LIVE_HEARTBEAT_MS: "500" });
  ({ alice, bob, tree, root } = await buildSharedTree(server.url));
});
afterAll(() => server.stop());

let tabs = 0;
function newTab(): string {
  return `tab-${process.pid}-${++tabs}-${Date.now()}`;
}

function watch(api: Api, tab: string, treeId = tree._id): Promise<SseReader> {
  return SseReader.open(server.url, `/api/trees/${treeId}/presence?tab=${tab}`, api.authHeader ? { authorization: api.authHeader } : {});
}

/** The last view the reader got. */
function lastView(reader: SseReader): { total: number; people: any[] } {
  const views = reader.data("presence");
  return views[views.length - 1];
}

async function until(reader: SseReader, test: (view: { total: number; people: any[] }) => boolean, timeoutMs = 5000): Promise<number> {
  const started = Date.now();
  for (;;) {
    const view = lastView(reader);
    if (view && test(view)) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms; last view ${JSON.stringify(view)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

it("shows each collaborator who else is here, and on which card, editing or not", async () => {
  const aliceTab = newTab();
  const bobTab = newTab();
  const aliceWatch = await watch(alice, aliceTab);
  expect(aliceWatch.status).toBe(200);
  expect(aliceWatch.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const bobWatch = await watch(bob, bobTab);
  expect((await alice.put(`/api/trees/${tree._id}/presence`, { tab: aliceTab, cardId: root._id, editing: false })).status).toBe(204);
  expect((await bob.put(`/api/trees/${tree._id}/presence`, { tab: bobTab, cardId: root._id, editing: true })).status).toBe(204);

  const bobName = bob.user.email.split("@")[0];
  await until(aliceWatch, (view) => view.people.some((p) => p.userId === bob.user._id && p.cardId === root._id && p.editing));
  const seen = lastView(aliceWatch);
  expect(seen.total).toBe(2);
  expect(seen.people.find((p) => p.userId === bob.user._id)).toEqual({ tab: bobTab, userId: bob.user._id, name: bobName, cardId: root._id, editing: true });
  // Editors first.
  expect(seen.people[0].userId).toBe(bob.user._id);
  await until(bobWatch, (view) => view.people.some((p) => p.userId === alice.user._id && p.cardId === root._id && !p.editing));

  // Closing the stream is leaving: gone at once for the others.
  bobWatch.close();
  const took = await until(aliceWatch, (view) => !view.people.some((p) => p.userId === bob.user._id), 2000);
  expect(took).toBeLessThan(2000);
  aliceWatch.close();
});

// This test and the next wait out a lease and beats (about 4 s and 7.5 s) and look only at
// their own tabs, so they run side by side (it.concurrent), each with the context's expect.
it.concurrent("forgets a tab that stops saying it is here within 5 s (offline, no stream to close)", async ({ expect }) => {
  const aliceWatch = await watch(alice, newTab());
  const silent = newTab();
  // A tab whose stream runs through a connection that is not closed (gone offline): only its beats tell.
  expect((await bob.put(`/api/trees/${tree._id}/presence`, { tab: silent, cardId: root._id, editing: false })).status).toBe(204);
  await until(aliceWatch, (view) => view.people.some((p) => p.tab === silent));
  const lastWord = Date.now();
  await until(aliceWatch, (view) => !view.people.some((p) => p.tab === silent), 6000);
  const gone = Date.now() - lastWord;
  expect(gone).toBeGreaterThan(2500);
  expect(gone).toBeLessThan(5000);
  aliceWatch.close();
});

it.concurrent("keeps a tab that keeps beating", async ({ expect }) => {
  const aliceWatch = await watch(alice, newTab());
  const beating = newTab();
  for (let i = 0; i < 5; i++) {
    expect((await bob.put(`/api/trees/${tree._id}/presence`, { tab: beating, cardId: root._id, editing: false })).status).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(lastView(aliceWatch).people.some((p) => p.tab === beating)).toBe(true);
  }
  aliceWatch.close();
});

it("is for collaborators only: 401 anonymous, 404 for other users, also on a public tree", async () => {
  const stranger = await buildUser(server.url, "stranger");
  expect((await alice.put(`/api/trees/${tree._id}`, { publicUrl: `open-${Date.now()}` })).status).toBe(200);
  const tab = newTab();
  const anonymous = await watch(alice.anonymous(), tab);
  expect(anonymous.status).toBe(401);
  expect(anonymous.json.error).toBe("unauthenticated");
  const other = await watch(stranger, tab);
  expect(other.status).toBe(404);
  expect(other.json.error).toBe("not_found");
  expect((await alice.anonymous().put(`/api/trees/${tree._id}/presence`, { tab, cardId: null, editing: false })).status).toBe(401);
  expect((await stranger.put(`/api/trees/${tree._id}/presence`, { tab, cardId: null, editing: false })).status).toBe(404);
  // A public reader's view of the tree says nothing of who is here.
  const aliceWatch = await watch(alice, newTab());
  await until(aliceWatch, (view) => view.total >= 1);
  const page = await alice.anonymous().get(`/api/public/${(await alice.get(`/api/trees`)).body.find((t: any) => t._id === tree._id).publicUrl}`);
  expect(page.status).toBe(200);
  expect(page.text).not.toContain(alice.user.email.split("@")[0]);
  expect(page.text).not.toMatch(/presence|editing/);
  aliceWatch.close();
  expect((await alice.put(`/api/trees/${tree._id}`, { publicUrl: null })).status).toBe(200);
});

it("refuses bad input with a 400 naming the field, and a tab that says too much with 429", async () => {
  expect((await watch(alice, "x")).status).toBe(400);
  const noTab = await SseReader.open(server.url, `/api/trees/${tree._id}/presence`, { authorization: alice.authHeader! });
  expect(noTab.status).toBe(400);
  expect(noTab.json.details[0].path).toBe("tab");
  const tab = newTab();
  const bad = await alice.put(`/api/trees/${tree._id}/presence`, { tab, cardId: "nope", editing: false });
  expect(bad.status).toBe(400);
  expect(bad.body.details[0].path).toBe("cardId");
  expect((await alice.put(`/api/trees/${tree._id}/presence`, { tab, cardId: null, editing: "yes" })).status).toBe(400);
  expect((await alice.put(`/api/trees/${tree._id}/presence`, { tab, cardId: null, editing: false, extra: 1 })).status).toBe(400);
  expect((await alice.put(`/api/trees/not-a-tree/presence`, { tab, cardId: null, editing: false })).status).toBe(400);
  const chatty = newTab();
  const statuses: number[] = [];
  for (let i = 0; i < 20; i++) statuses.push((await alice.put(`/api/trees/${tree._id}/presence`, { tab: chatty, cardId: null, editing: false })).status);
  expect(statuses.slice(0, 8).every((s) => s === 204)).toBe(true);
  const refused = await alice.put(`/api/trees/${tree._id}/presence`, { tab: chatty, cardId: null, editing: false });
  expect(refused.status).toBe(429);
  expect(refused.body.error).toBe("too_many_requests");
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
});

it("drops a collaborator taken off the tree, and ends their stream", async () => {
  const carol = await buildUser(server.url, "carol");
  expect((await alice.post(`/api/trees/${tree._id}/collaborators`, { email: carol.user.email })).status).toBe(201);
  const aliceWatch = await watch(alice, newTab());
  const carolTab = newTab();
  const carolWatch = await watch(carol, carolTab);
  await until(aliceWatch, (view) => view.people.some((p) => p.userId === carol.user._id));
  expect((await alice.delete(`/api/trees/${tree._id}/collaborators/${carol.user._id}`)).status).toBe(204);
  await carolWatch.waitForEnd(2000);
  await until(aliceWatch, (view) => !view.people.some((p) => p.userId === carol.user._id), 2000);
  expect((await carol.put(`/api/trees/${tree._id}/presence`, { tab: carolTab, cardId: null, editing: false })).status).toBe(404);
  aliceWatch.close();
});

it("is never a change: the tree's revision and history stay as they were", async () => {
  const before = (await alice.get(`/api/trees`)).body.find((t: any) => t._id === tree._id);
  const history = (await alice.get(`/api/trees/${tree._id}/history`)).body;
  const tab = newTab();
  const w = await watch(bob, tab);
  await bob.put(`/api/trees/${tree._id}/presence`, { tab, cardId: root._id, editing: true });
  w.close();
  const after = (await alice.get(`/api/trees`)).body.find((t: any) => t._id === tree._id);
  expect(after.revision).toBe(before.revision);
  expect(after.updatedAt).toBe(before.updatedAt);
  expect((await alice.get(`/api/trees/${tree._id}/history`)).body).toEqual(history);
});
