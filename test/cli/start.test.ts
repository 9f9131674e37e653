/**
 * `npm start`'s path: scripts/start.mjs builds dist/ when stale and runs the compiled
 * server (dist/server.mjs) in its own process. The other suites run the server the test
 * set-up compiled (test/helpers/server.ts); this is what proves `npm start` itself: the
 * staleness check and build, the API, GraphQL from its lazily loaded chunk, the browser
 * client from dist/web, and a clean stop on SIGTERM.
 */
import { describe, expect, it } from "vitest";
import { Api, buildUser } from "../helpers/api.js";
import { startTestServer } from "../helpers/server.js";

describe("npm start (compiled)", { timeout: 120_000 }, () => {
  it("builds if needed, serves from dist/, and stops on SIGTERM", async () => {
    // Builds first when dist/ is older than the sources: a few seconds more.
    const server = await startTestServer({ args: ["scripts/start.mjs"], startTimeoutMs: 100_000 });
    const { url } = server;
    try {
      const ada = await buildUser(url, "start");
      const index = await ada.get("/api/index");
      expect(index.status).toBe(200);
      expect(index.body.email).toBe(ada.user.email);
      const graphql = await ada.post("/graphql", { query: "{ me { email } }" });
      expect(graphql.body).toEqual({ data: { me: { email: ada.user.email } } });
      const page = await new Api(url).get("/");
      expect(page.status).toBe(200);
      expect(page.text).toMatch(/src="\/app-[A-Z0-9]+\.js"/);
    } finally {
      await server.stop();
    }
    expect(server.process.exitCode, server.output.join("\n")).toBe(0);
    expect(server.output.join("\n")).toContain('"message":"stopping"');
  });
});
