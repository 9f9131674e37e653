/**
 * GraphQL is loaded once the server listens, not on the first /graphql request (issue 27:
 * that request used to wait ~1.5 s for yoga and the schema), and one query is run through it
 * unseen (the first execution's ~50 ms). Start-up does not wait for it.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
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
  const res = await fetch(`${server.url}/graphql`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: "{ __typename }" }) });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ data: { __typename: "Query" } });
});
