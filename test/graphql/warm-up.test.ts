/**
 * GraphQL is loaded once the server listens, not on the first /graphql request (issue 27:
 * that request used to wait ~1.5 s for yoga and the schema), and one query is run through it
 * unseen (the first execution's ~50 ms). Start-up does not wait for it, and requests do not
 * either: it loads once the server is idle (issue 32: loading holds the event loop in pieces
 * of hundreds of milliseconds, which a load begun at start waited for).
 */
import http from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, buildUser } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

it("loads GraphQL by itself after start, before any /graphql request", async () => {
  const loaded = () => server.output.find((line) => line.includes('"message":"graphql loaded"'));
  const deadline = Date.now() + 20_000;
  while (!loaded() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(loaded(), server.output.join("\n")).toBeDefined();
  // It came after the server said it was listening: start-up did not wait for it.
  const listening = server.output.findIndex((line) => line.includes('"message":"listening"'));
  expect(server.output.indexOf(loaded()!)).toBeGreaterThan(listening);
  // And one query ran through the whole pipeline, so the first client's does not pay its first run.
  expect(JSON.parse(loaded()!)).toMatchObject({ warmUp: "ok" });
  expect(server.output.filter((line) => line.includes('"level":"error"'))).toEqual([]);
  const res = await fetch(`${server.url}/graphql`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: "{ __typename }" }) });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ data: { __typename: "Query" } });
});

it("waits while requests keep coming, and loads once they stop", async () => {
  const fresh = await startTestServer();
  try {
    const loaded = () => fresh.output.some((line) => line.includes('"message":"graphql loaded"'));
    // Four clients one request after another each, for a second and a half: never idle.
    const until = Date.now() + 1500;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (Date.now() < until) expect((await fetch(`${fresh.url}/healthz`)).status).toBe(200);
      }),
    );
    const stoppedAt = Date.now();
    const deadline = Date.now() + 20_000;
    while (!loaded() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const line = fresh.output.find((l) => l.includes('"message":"graphql loaded"'));
    expect(line, fresh.output.join("\n")).toBeDefined();
    // When the load began: it logs when it ended and how long it took.
    const { time, ms } = JSON.parse(line!) as { time: string; ms: number };
    expect(Date.parse(time) - ms).toBeGreaterThanOrEqual(stoppedAt - 50);
  } finally {
    await fresh.stop();
  }
});

it("is not put off by a live stream that stays open", async () => {
  const fresh = await startTestServer();
  let open: http.ClientRequest | undefined;
  try {
    const alice = await buildUser(fresh.url);
    const tree = await buildTree(alice);
    const status = await new Promise<number>((resolve, reject) => {
      open = http.get(`${fresh.url}/api/trees/${tree._id}/events`, { headers: { authorization: alice.authHeader! } }, (res) => resolve(res.statusCode ?? 0));
      open.once("error", reject);
    });
    expect(status).toBe(200);
    const deadline = Date.now() + 20_000;
    const loaded = () => fresh.output.some((line) => line.includes('"message":"graphql loaded"'));
    while (!loaded() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(loaded(), fresh.output.join("\n")).toBe(true);
  } finally {
    open?.destroy();
    await fresh.stop();
  }
});
