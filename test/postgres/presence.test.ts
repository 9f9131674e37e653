/**
 * Presence across two server processes on one PostgreSQL database (issue 30): a tab watched
 * through one process and beating through the other is shown on both; a closed stream is gone
 * from the other process at once, a silent tab within 5 s; a collaborator taken off the tree
 * through one process is cut off and dropped on the other. Nothing of it is in the database.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { Api, buildSharedTree, buildUser } from "../helpers/api.js";
import { adminQuery, withDatabase } from "../helpers/postgres.js";
import { twoProcessesOnOneDatabase, type TestServer } from "../helpers/server.js";
import { SseReader } from "../live/sse-client.js";

let databaseUrl: string;
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  ({ databaseUrl, a, b } = await twoProcessesOnOneDatabase());
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

function on(server: TestServer, api: Api): Api {
  return new Api(server.url, api.credentials);
}

let tabs = 0;
const newTab = () => `pg-tab-${process.pid}-${++tabs}`;

function watch(server: TestServer, api: Api, treeId: string, tab: string): Promise<SseReader> {
  return SseReader.open(server.url, `/api/trees/${treeId}/presence?tab=${tab}`, { authorization: api.authHeader! });
}

async function until(reader: SseReader, test: (people: any[]) => boolean, timeoutMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const views = reader.data("presence");
    const people = views[views.length - 1]?.people;
    if (people && test(people)) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms; last ${JSON.stringify(people)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

it("shows a tab watched and beating through one process to a collaborator on the other, and drops it at once when it closes", async () => {
  const { alice, bob, tree, root } = await buildSharedTree(a.url);
  const aliceTab = newTab();
  const aliceOnA = await watch(a, alice, tree._id, aliceTab);
  const bobTab = newTab();
  const bobOnB = await watch(b, bob, tree._id, bobTab);
  expect(bobOnB.status).toBe(200);
  // A tab is present while it beats (a watch alone holds it for one lease).
  expect((await alice.put(`/api/trees/${tree._id}/presence`, { tab: aliceTab, cardId: null, editing: false })).status).toBe(204);
  expect((await on(b, bob).put(`/api/trees/${tree._id}/presence`, { tab: bobTab, cardId: root._id, editing: true })).status).toBe(204);
  await until(aliceOnA, (people) => people.some((p) => p.tab === bobTab && p.cardId === root._id && p.editing), 3000);
  await until(bobOnB, (people) => people.some((p) => p.userId === alice.user._id), 3000);
  bobOnB.close();
  expect(await until(aliceOnA, (people) => !people.some((p) => p.tab === bobTab), 2000)).toBeLessThan(2000);
  aliceOnA.close();
  // Nothing was written: no table or row of the database holds it.
  const rows = await adminQuery(
    "SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = 'public' AND column_name ILIKE '%presence%'",
    withDatabase(databaseUrl, new URL(databaseUrl).pathname.slice(1)),
  );
  expect(rows.rows[0].n).toBe(0);
});

it("keeps a tab whose stream is on one process and whose beats go to the other, and forgets it within 5 s once they stop", async () => {
  const { alice, bob, tree, root } = await buildSharedTree(a.url);
  const aliceOnA = await watch(a, alice, tree._id, newTab());
  const bobTab = newTab();
  // Behind a load balancer the beats may land on either process.
  for (let i = 0; i < 4; i++) {
    const server = i % 2 === 0 ? b : a;
    expect((await on(server, bob).put(`/api/trees/${tree._id}/presence`, { tab: bobTab, cardId: root._id, editing: false })).status).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const views = aliceOnA.data("presence");
    expect(views[views.length - 1].people.filter((p: any) => p.tab === bobTab)).toHaveLength(1);
  }
  const lastWord = Date.now();
  await until(aliceOnA, (people) => !people.some((p) => p.tab === bobTab), 6000);
  expect(Date.now() - lastWord).toBeLessThan(5000);
  aliceOnA.close();
});

it("cuts off a collaborator removed through the other process", async () => {
  const { alice, bob, tree } = await buildSharedTree(a.url);
  const aliceOnA = await watch(a, alice, tree._id, newTab());
  const bobOnB = await watch(b, bob, tree._id, newTab());
  await until(aliceOnA, (people) => people.some((p) => p.userId === bob.user._id), 3000);
  expect((await alice.delete(`/api/trees/${tree._id}/collaborators/${bob.user._id}`)).status).toBe(204);
  await bobOnB.waitForEnd(3000);
  await until(aliceOnA, (people) => !people.some((p) => p.userId === bob.user._id), 3000);
  // Neither process lets them back in.
  for (const server of [a, b]) expect((await watch(server, bob, tree._id, newTab())).status).toBe(404);
  const stranger = await buildUser(b.url, "stranger");
  expect((await on(b, stranger).put(`/api/trees/${tree._id}/presence`, { tab: newTab(), cardId: null, editing: false })).status).toBe(404);
  aliceOnA.close();
});
