/**
 * The database going away under a running server (issue 17, "Faults"): between the server
 * and PostgreSQL sits a TCP relay the test can cut, as a restart or a network failure
 * would. While it is cut, requests answer 503 with the SPEC §4 body at once (never a hang)
 * and /healthz says so (the database, and the notice connection that hears other
 * processes); once it is back the server serves again by itself, listens again, and every
 * write it acknowledged before is there.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildTree, buildUser } from "../helpers/api.js";
import { adminUrl, createTestDatabase } from "../helpers/postgres.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { Relay } from "./relay.js";

let relay: Relay;
let server: TestServer;
let owner: Awaited<ReturnType<typeof buildUser>>;

beforeAll(async () => {
  const database = new URL(await createTestDatabase());
  const admin = new URL(adminUrl());
  relay = new Relay({ host: admin.hostname, port: Number(admin.port || 5432) });
  await relay.up();
  database.hostname = "127.0.0.1";
  database.port = String(relay.port);
  server = await startTestServer({ env: { STORE: "postgres", DATABASE_URL: database.toString() } });
  owner = await buildUser(server.url, "outage");
});

/** /healthz's body once `done` holds of it (polled, for at most 15 s). */
async function healthUntil(done: (body: Record<string, string>) => boolean): Promise<{ status: number; body: Record<string, string> }> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const res = await fetch(`${server.url}/healthz`);
    const body = (await res.json()) as Record<string, string>;
    if (done(body) || Date.now() > deadline) return { status: res.status, body };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

afterAll(async () => {
  await server?.stop();
  await relay?.down();
});

describe("PostgreSQL going away under a running server", { timeout: 60_000 }, () => {
  it("answers 503 with the SPEC §4 body meanwhile, then serves again by itself with every acknowledged write", async () => {
    expect(await healthUntil(() => true)).toEqual({ status: 200, body: { status: "ok", database: "ok", notices: "listening" } });
    const tree = await buildTree(owner, { name: "Kept" });
    const card = await buildCard(owner, tree._id, { content: "acknowledged before the outage" });

    await relay.down();
    const started = Date.now();
    const read = await owner.get(`/api/trees/${tree._id}/cards`);
    expect(read.status).toBe(503);
    expect(read.body).toEqual({ error: "unavailable", message: expect.stringMatching(/database/) });
    const write = await owner.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 5, content: "during" });
    expect(write.status).toBe(503);
    expect(write.body.error).toBe("unavailable");
    const health = await healthUntil((body) => body.notices === "reconnecting");
    expect(health).toEqual({ status: 503, body: { status: "unavailable", database: "unreachable", notices: "reconnecting" } });
    // Refused connections fail at once; nothing waits for a request timeout.
    expect(Date.now() - started).toBeLessThan(15_000);

    await relay.up();
    const back = await owner.get(`/api/trees/${tree._id}/cards`);
    expect(back.status).toBe(200);
    expect(back.body.map((c: { _id: string }) => c._id)).toContain(card._id);
    expect(back.body.map((c: { content: string }) => c.content)).not.toContain("during");
    expect((await buildCard(owner, tree._id, { content: "after" })).content).toBe("after");
    // The notice connection comes back by itself too (its retries back off, hence the wait).
    expect(await healthUntil((body) => body.notices === "listening")).toEqual({
      status: 200,
      body: { status: "ok", database: "ok", notices: "listening" },
    });
  });
});
