/**
 * A process that lost its link to the database while another kept writing (SPEC §11): B
 * reaches PostgreSQL through a relay the test cuts, A directly. Whatever A commits while B
 * is cut off, B hears nothing of. Once the relay is back B's notice connection returns by
 * itself and B treats every tree as possibly moved: its live stream catches up from the
 * change log, and its GraphQL results computed before are not served again, although no
 * further write ever announces anything.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { adminUrl, createTestDatabase } from "../helpers/postgres.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { SseReader } from "../live/sse-client.js";
import { Relay } from "./relay.js";

let relay: Relay;
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  const direct = await createTestDatabase();
  const admin = new URL(adminUrl());
  relay = new Relay({ host: admin.hostname, port: Number(admin.port || 5432) });
  await relay.up();
  const relayed = new URL(direct);
  relayed.hostname = "127.0.0.1";
  relayed.port = String(relay.port);
  a = await startTestServer({ env: { STORE: "postgres", DATABASE_URL: direct } });
  b = await startTestServer({ env: { STORE: "postgres", DATABASE_URL: relayed.toString() } });
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await relay?.down();
});

describe("a process cut off from the database while another writes", { timeout: 60_000 }, () => {
  it("catches its streams up and drops its cached results once it is back", async () => {
    const ownerA = await buildUser(a.url, "resync");
    const ownerB = new Api(b.url, ownerA.credentials);
    const tree = await buildTree(ownerA, { name: "Missed" });
    await buildCard(ownerA, tree._id, { content: "heard by B", position: 1 });

    const query = "query ($id: ID!) { tree(id: $id) { cards { content } } }";
    const contents = async () => {
      const res = await fetch(`${b.url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: ownerB.authHeader! },
        body: JSON.stringify({ query, variables: { id: tree._id } }),
      });
      return ((await res.json()).data.tree.cards as { content: string }[]).map((c) => c.content);
    };
    // B computes and caches the result, and follows the tree.
    expect(await contents()).toContain("heard by B");
    expect(await contents()).toContain("heard by B");
    const stream = await SseReader.open(b.url, `/api/trees/${tree._id}/events`, { authorization: ownerB.authHeader! });
    expect(stream.status).toBe(200);

    await relay.down();
    const missed = await buildCard(ownerA, tree._id, { content: "missed by B", position: 2 });
    await relay.up();

    // No write follows: only B's reconnection can bring the change to its stream.
    const [change] = await stream.waitFor(1, "change", 20_000);
    expect(change.cards.map((c: { _id: string }) => c._id)).toEqual([missed._id]);
    // And the result cached before the cut is not served again.
    expect(await contents()).toContain("missed by B");
    stream.close();
  });
});
