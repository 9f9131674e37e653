/**
 * GraphQL is loaded once the server listens, not on the first /graphql request (issue 27:
 * that request used to wait ~1.5 s for yoga and the schema). Start-up does not wait for it.
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
  const res = await fetch(`${server.url}/graphql`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: "{ __typename }" }) });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ data: { __typename: "Query" } });
});
