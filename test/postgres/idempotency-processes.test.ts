/**
 * Idempotency keys across two server processes on one database (SPEC §13, §11): a replay
 * on process B answers what process A committed; a key that another process is running is
 * 409 with Retry-After on B; a claim whose lease ended (its process died) is taken over,
 * and a creation with a client-chosen id is then not made twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import pg from "pg";
import { twoProcessesOnOneDatabase, type TestServer } from "../helpers/server.js";
import { newRecordId } from "../../src/shared/ids.js";

let databaseUrl: string;
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  ({ databaseUrl, a, b } = await twoProcessesOnOneDatabase());
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

const on = (server: TestServer, api: Api) => new Api(server.url, api.credentials);

async function sql(query: string, params: unknown[] = []): Promise<any[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(query, params)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Puts a running claim of `key` in the table, for the same request as `doneKey` (same
 * fingerprint): what a request another process is running looks like, lease and all.
 */
async function claimAsAnotherProcess(userId: string, doneKey: string, key: string, leaseUntil: Date): Promise<void> {
  await sql(
    `INSERT INTO idempotency_keys (user_id, key, fingerprint, claim, lease_until, created_at, expires_at)
     SELECT user_id, $2, fingerprint, 'another process', $3, created_at, expires_at FROM idempotency_keys WHERE user_id = $1 AND key = $4`,
    [userId, key, leaseUntil.toISOString(), doneKey],
  );
}

describe("idempotency keys across two processes", { timeout: 60_000 }, () => {
  it("a replay on B answers what A committed, and B makes no second card", async () => {
    const alice = await buildUser(a.url);
    const tree = await buildTree(alice);
    const body = { treeId: tree._id, position: 1, content: "through A" };
    const onA = await alice.post(`/api/trees/${tree._id}/cards`, body, { "Idempotency-Key": "two-processes-1" });
    expect(onA.status).toBe(201);
    const onB = await on(b, alice).post(`/api/trees/${tree._id}/cards`, body, { "Idempotency-Key": "two-processes-1" });
    expect(onB.status).toBe(201);
    expect(onB.headers.get("idempotent-replayed")).toBe("true");
    expect(onB.text).toBe(onA.text);
    expect(onB.headers.get("x-tree-revision")).toBe(onA.headers.get("x-tree-revision"));
    const cards = (await on(b, alice).get(`/api/trees/${tree._id}/cards`)).body;
    expect(cards.filter((c: any) => c.content === "through A")).toHaveLength(1);
    // And the other way round, with another request on B replayed on A.
    const second = { ...body, content: "through B" };
    const fromB = await on(b, alice).post(`/api/trees/${tree._id}/cards`, second, { "Idempotency-Key": "two-processes-2" });
    const onAAgain = await alice.post(`/api/trees/${tree._id}/cards`, second, { "Idempotency-Key": "two-processes-2" });
    expect([onAAgain.headers.get("idempotent-replayed"), onAAgain.text]).toEqual(["true", fromB.text]);
  });

  it("a key another process is running is 409 with Retry-After; once its lease ends, the key is taken over", async () => {
    const alice = await buildUser(a.url);
    const tree = await buildTree(alice);
    const _id = newRecordId();
    const body = { _id, treeId: tree._id, position: 1, content: "chosen id" };
    expect((await alice.post(`/api/trees/${tree._id}/cards`, body, { "Idempotency-Key": "done" })).status).toBe(201);

    await claimAsAnotherProcess(alice.user._id, "done", "running", new Date(Date.now() + 60_000));
    const refused = await on(b, alice).post(`/api/trees/${tree._id}/cards`, body, { "Idempotency-Key": "running" });
    expect(refused.status).toBe(409);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.body.error).toBe("conflict");

    // The claimant died after committing (its lease ended, no answer kept): B runs the
    // request again, and the client-chosen id keeps the card from being made twice.
    await claimAsAnotherProcess(alice.user._id, "done", "dead", new Date(Date.now() - 1_000));
    const takenOver = await on(b, alice).post(`/api/trees/${tree._id}/cards`, body, { "Idempotency-Key": "dead" });
    expect(takenOver.status).toBe(409);
    expect(takenOver.headers.get("retry-after")).toBeNull();
    expect(takenOver.body.message).toContain("exists already");
    const [row] = await sql("SELECT claim, status FROM idempotency_keys WHERE user_id = $1 AND key = 'dead'", [alice.user._id]);
    expect(row).toEqual({ claim: null, status: 409 });
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c._id === _id)).toHaveLength(1);
  });
});
