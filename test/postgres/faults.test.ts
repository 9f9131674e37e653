/**
 * Faults of a service of two processes on one PostgreSQL (issue 17, "Faults"):
 * - the database restarting while writes flow through both: every request answers 201 or
 *   503 with the SPEC §4 body, none hangs; the service comes back by itself; every write
 *   acknowledged is in the database; the live streams on both processes carry every
 *   change, in order, without a gap (the feed reconnects and catches up from the log);
 * - one app process killed (SIGKILL) in the middle of writes: every write it acknowledged
 *   is there, and the change log agrees with the cards.
 */
import { afterAll, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { createTestDatabase } from "../helpers/postgres.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { SseReader } from "../live/sse-client.js";
import { startThrowawayPostgres, type ThrowawayPostgres } from "./throwaway-postgres.js";

/** How long any one request may take here: the pool's 5 s wait for a connection, and some. */
const REQUEST_LIMIT_MS = 12_000;

interface Outcome {
  status: number;
  body: any;
  ms: number;
}

/** Keeps `lanes` writers posting cards through `servers` (in turn) until `stop()`. */
function keepWriting(users: Api[], treeId: string, lanes: number) {
  const outcomes: Outcome[] = [];
  let stopped = false;
  let n = 0;
  const lane = async (k: number) => {
    // Each lane takes the servers in turn by its own count. (Picking by the shared count let
    // lanes that wake in a fixed order all land on one server every round: after a kill,
    // every lane kept trying the dead one, and nothing reached the survivor for 20 s or more.)
    for (let own = k; !stopped; own++) {
      const api = users[own % users.length];
      const i = n++;
      const started = Date.now();
      try {
        const res = await fetch(`${api.baseUrl}/api/trees/${treeId}/cards`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: api.authHeader! },
          body: JSON.stringify({ treeId, position: i, content: `write ${i}` }),
          signal: AbortSignal.timeout(REQUEST_LIMIT_MS),
        });
        outcomes.push({ status: res.status, body: await res.json(), ms: Date.now() - started });
      } catch (err) {
        outcomes.push({ status: 0, body: String(err), ms: Date.now() - started });
      }
      // Failures come back at once; do not spin on them.
      if (outcomes.at(-1)!.status !== 201) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const running = Promise.all(Array.from({ length: lanes }, (_, k) => lane(k)));
  return {
    outcomes,
    acknowledged: () => outcomes.filter((o) => o.status === 201).length,
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

async function until(probe: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What the database holds of the tree: its revision, its change log, its live cards. */
async function stored(query: (sql: string, params: unknown[]) => Promise<any[]>, treeId: string) {
  const [tree] = await query("SELECT revision FROM trees WHERE id = $1", [treeId]);
  const changes = (await query("SELECT revision FROM changes WHERE tree_id = $1 ORDER BY revision", [treeId])).map((r) => r.revision);
  const cards = new Set((await query("SELECT id FROM cards WHERE tree_id = $1 AND trashed IS NULL", [treeId])).map((r) => r.id));
  return { revision: tree.revision as number, changes: changes as number[], cards };
}

describe("a database restarting under load", { timeout: 180_000 }, () => {
  let database: ThrowawayPostgres | undefined;
  const servers: TestServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await database?.destroy();
  });

  it("answers 201 or 503 to every write meanwhile, never hangs, comes back by itself and keeps every acknowledged write", async () => {
    // A retry starts afresh: a failed try's servers and database go first (a retry used to
    // take the failed try's servers, `servers[0]` and `[1]`, and failed every time).
    await Promise.all(servers.splice(0).map((server) => server.stop()));
    await database?.destroy();
    database = await startThrowawayPostgres();
    const env = { STORE: "postgres", DATABASE_URL: database.url };
    servers.push(await startTestServer({ env }), await startTestServer({ env }));
    const [a, b] = servers;
    const ownerA = await buildUser(a.url, "restart");
    const ownerB = new Api(b.url, ownerA.credentials);
    const tree = await buildTree(ownerA, { name: "Under load" });
    const headers = { authorization: ownerA.authHeader! };
    const streams = [
      await SseReader.open(a.url, `/api/trees/${tree._id}/events`, headers),
      await SseReader.open(b.url, `/api/trees/${tree._id}/events`, headers),
    ];

    const writes = keepWriting([ownerA, ownerB], tree._id, 4);
    await until(() => writes.acknowledged() >= 10, 30_000, "writes before the restart");
    await database.stop();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await database.start();
    const before = writes.acknowledged();
    await until(() => writes.acknowledged() >= before + 20, 60_000, "writes acknowledged again after the restart").catch((err) => {
      throw new Error(`${String(err)}\n${JSON.stringify(writes.outcomes.slice(-5))}\n${a.output.slice(-10).join("\n")}`);
    });
    await writes.stop();

    // Both processes lived through it.
    for (const server of servers) expect(server.process.exitCode, server.output.slice(-30).join("\n")).toBe(null);
    for (const outcome of writes.outcomes) {
      expect(outcome.ms).toBeLessThan(REQUEST_LIMIT_MS);
      if (outcome.status === 201) continue;
      expect(outcome.status, JSON.stringify(outcome.body)).toBe(503);
      expect(outcome.body).toEqual({ error: "unavailable", message: expect.any(String) });
    }
    expect(writes.outcomes.some((o) => o.status === 503)).toBe(true);

    // Every acknowledged card is stored, and the log agrees with the cards.
    const acknowledged = writes.outcomes.filter((o) => o.status === 201).map((o) => o.body._id as string);
    const now = await stored((sql, params) => database!.query(sql, params), tree._id);
    for (const id of acknowledged) expect(now.cards.has(id)).toBe(true);
    expect(now.changes).toEqual(Array.from({ length: now.revision }, (_, i) => i + 1));
    expect(now.cards.size).toBe(now.revision); // tree.create made one card, every other change one more

    // Both processes' streams carry every change, in order, without gap or duplicate.
    for (const stream of streams) {
      const changes = await stream.waitFor(now.revision - tree.revision, "change", 20_000);
      expect(stream.data("reset"), JSON.stringify(stream.events.slice(-3))).toEqual([]);
      expect(changes.map((c) => c.revision)).toEqual(Array.from({ length: now.revision - tree.revision }, (_, i) => tree.revision + 1 + i));
      stream.close();
    }
    for (const server of servers) expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});

describe("an app process killed in the middle of writes", { timeout: 120_000 }, () => {
  const servers: TestServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it("loses no acknowledged write, and the change log agrees with the cards", async () => {
    // A retry starts afresh, with servers of its own (`servers[0]` would be the killed one).
    await Promise.all(servers.splice(0).map((server) => server.stop()));
    const databaseUrl = await createTestDatabase();
    const env = { STORE: "postgres", DATABASE_URL: databaseUrl };
    servers.push(await startTestServer({ env }), await startTestServer({ env }));
    const [a, b] = servers;
    const ownerA = await buildUser(a.url, "kill");
    const ownerB = new Api(b.url, ownerA.credentials);
    const tree = await buildTree(ownerA, { name: "Killed" });

    const writes = keepWriting([ownerA, ownerB], tree._id, 6);
    await until(() => writes.acknowledged() >= 30, 30_000, "writes before the kill");
    await a.kill();
    const before = writes.acknowledged();
    await until(() => writes.acknowledged() >= before + 10, 30_000, "writes through the survivor").catch((err) => {
      throw new Error(`${String(err)}\n${JSON.stringify(writes.outcomes.slice(-5))}\n${b.output.slice(-15).join("\n")}`);
    });
    await writes.stop();

    // Requests cut by the kill got no answer (status 0); nothing else may fail.
    for (const outcome of writes.outcomes) expect([0, 201]).toContain(outcome.status);
    const query = async (sql: string, params: unknown[]) => {
      const client = new (await import("pg")).default.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        return (await client.query(sql, params)).rows;
      } finally {
        await client.end();
      }
    };
    const now = await stored(query, tree._id);
    const acknowledged = writes.outcomes.filter((o) => o.status === 201).map((o) => o.body._id as string);
    for (const id of acknowledged) expect(now.cards.has(id)).toBe(true);
    expect(now.changes).toEqual(Array.from({ length: now.revision }, (_, i) => i + 1));
    expect(now.cards.size).toBe(now.revision);
    // The survivor serves the tree as stored.
    const read = await ownerB.get(`/api/trees/${tree._id}/cards`);
    expect(new Set(read.body.map((c: any) => c._id))).toEqual(now.cards);
  });
});
