/**
 * Idempotency keys across two server processes on one database (SPEC §13, §11): a replay
 * on process B answers what process A committed; a key that another process is running is
 * 409 with Retry-After on B; a claim whose lease ended (its process died) is taken over,
 * and a creation with a client-chosen id is then not made twice; a process killed between
 * a keyed commit and its kept answer leaves a key that the other process answers from the
 * committed change.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Api, buildTree, buildUser, retryUntilAnswered } from "../helpers/api.js";
import { adminQuery } from "../helpers/postgres.js";
import { startTestServer, twoProcessesOnOneDatabase, type TestServer } from "../helpers/server.js";
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
  return (await adminQuery(query, databaseUrl, params)).rows;
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

describe("a key claimed with its change (PostgreSQL runs a keyed change before claiming its key)", { timeout: 90_000 }, () => {
  it("the same request with one key on both processes at once makes one card; the other answers its replay or 409, then the replay", async () => {
    const alice = await buildUser(a.url);
    const tree = await buildTree(alice);
    const onB = on(b, alice);
    const post = (api: Api, i: number) =>
      api.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: i, content: `both at once ${i}` }, { "Idempotency-Key": `at-once-${i}` });
    for (let i = 0; i < 12; i++) {
      const answers = await Promise.all([post(alice, i), post(onB, i)]);
      const made = answers.filter((r) => r.status === 201 && r.headers.get("idempotent-replayed") === null);
      expect(made, `key ${i}: ${answers.map((r) => r.status).join(", ")}`).toHaveLength(1);
      const other = answers.find((r) => r !== made[0])!;
      if (other.status === 409) {
        expect([other.body.error, other.headers.get("retry-after")]).toEqual(["conflict", "1"]);
        await vi.waitFor(async () => expect((await post(other === answers[0] ? alice : onB, i)).headers.get("idempotent-replayed")).toBe("true"));
      } else {
        expect([other.status, other.headers.get("idempotent-replayed"), other.text]).toEqual([201, "true", made[0].text]);
      }
    }
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content.startsWith("both at once"));
    expect(cards).toHaveLength(12);
    const keyed = await sql("SELECT count(*)::integer AS n FROM changes WHERE idem LIKE $1", [`${alice.user._id} at-once-%`]);
    expect(keyed).toEqual([{ n: 12 }]);
  });

  it("a replay on B of what A answered replays it, even where running it again would now fail or succeed", async () => {
    const alice = await buildUser(a.url);
    const tree = await buildTree(alice);
    const onB = on(b, alice);
    // A client-chosen id: run again, the creation would be 409 "exists already".
    const chosen = { _id: newRecordId(), treeId: tree._id, position: 1, content: "chosen on A" };
    const created = await alice.post(`/api/trees/${tree._id}/cards`, chosen, { "Idempotency-Key": "chosen" });
    expect(created.status).toBe(201);
    const replayed = await onB.post(`/api/trees/${tree._id}/cards`, chosen, { "Idempotency-Key": "chosen" });
    expect([replayed.status, replayed.headers.get("idempotent-replayed"), replayed.text]).toEqual([201, "true", created.text]);

    // A refusal (no such parent) kept on A, replayed on B once the request would succeed.
    const parentId = newRecordId();
    const orphan = { treeId: tree._id, parentId, position: 1, content: "under a parent not there yet" };
    const refused = await alice.post(`/api/trees/${tree._id}/cards`, orphan, { "Idempotency-Key": "refused" });
    expect(refused.status).toBe(404);
    expect((await alice.post(`/api/trees/${tree._id}/cards`, { _id: parentId, treeId: tree._id, position: 2, content: "parent" })).status).toBe(201);
    const again = await onB.post(`/api/trees/${tree._id}/cards`, orphan, { "Idempotency-Key": "refused" });
    expect([again.status, again.headers.get("idempotent-replayed"), again.text]).toEqual([404, "true", refused.text]);
    expect((await onB.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === orphan.content)).toHaveLength(0);

    // The key with another request: 422 on B, though the request would succeed there.
    const reused = await onB.post(`/api/trees/${tree._id}/cards`, { ...chosen, _id: newRecordId() }, { "Idempotency-Key": "chosen" });
    expect([reused.status, reused.body.error]).toEqual([422, "idempotency_key_reused"]);
    expect((await onB.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === chosen.content)).toHaveLength(1);
  });
});

describe("a GraphQL mutation's key claimed with its change", { timeout: 60_000 }, () => {
  const CREATE = `mutation Create($input: CreateCardInput!) { createCard(input: $input) { id content } }`;
  const graphql = async (server: TestServer, api: Api, key: string, input: Record<string, unknown>) => {
    const res = await fetch(`${server.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: api.authHeader!, "Idempotency-Key": key },
      body: JSON.stringify({ query: CREATE, variables: { input } }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
  };

  it("is replayed on B as A answered it, and another request with it is 422 on B, though B ran it up to its commit", async () => {
    const alice = await buildUser(a.url);
    const tree = await buildTree(alice);
    const input = { treeId: tree._id, position: 1, content: "graphql on A" };
    const first = await graphql(a, alice, "gq-across", input);
    expect([first.status, first.body.errors]).toEqual([200, undefined]);
    const replayed = await graphql(b, alice, "gq-across", input);
    expect([replayed.status, replayed.headers.get("idempotent-replayed"), replayed.text]).toEqual([200, "true", first.text]);
    const reused = await graphql(b, alice, "gq-across", { ...input, content: "another on B" });
    expect(reused.status).toBe(422);
    expect(reused.headers.get("idempotent-replayed")).toBeNull();
    expect(reused.body.errors.map((e: any) => e.extensions.code)).toEqual(["idempotency_key_reused"]);
    const contents = (await alice.get(`/api/trees/${tree._id}/cards`)).body.map((c: any) => c.content);
    expect(contents.filter((c: string) => c === input.content || c === "another on B")).toEqual([input.content]);
  });
});

describe("a process killed between a keyed commit and its kept answer", { timeout: 90_000 }, () => {
  it("leaves its key to the other process, which answers from the committed change and makes nothing twice", async () => {
    const control = path.join(os.tmpdir(), `cardtree-hold-${process.pid}-${Date.now()}`);
    const shared = { STORE: "postgres", DATABASE_URL: databaseUrl };
    const dying = await startTestServer({ env: { ...shared, CARDTREE_FAULTS_FILE: control } });
    try {
      const alice = await buildUser(dying.url);
      const tree = await buildTree(alice);
      const body = { treeId: tree._id, position: 1, content: "committed on the dying process" };
      const key = { "Idempotency-Key": "killed-after-commit" };
      await writeFile(control, "hold-answer");
      const lost = alice.post(`/api/trees/${tree._id}/cards`, body, key).then(
        () => "answered",
        () => "lost",
      );
      await vi.waitFor(() => expect(dying.output.some((line) => line.includes("fault: holding an answer"))).toBe(true), { timeout: 20_000, interval: 20 });
      await dying.kill();
      expect(await lost).toBe("lost");
      // The dead claim's lease (30 s) ends; the test ends it rather than wait.
      await sql("UPDATE idempotency_keys SET lease_until = '1970-01-01T00:00:00.000Z' WHERE user_id = $1", [alice.user._id]);

      const onB = on(b, alice);
      const made = (await onB.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === body.content);
      expect(made).toHaveLength(1);
      const retry = await onB.post(`/api/trees/${tree._id}/cards`, body, key);
      expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([201, "true"]);
      expect(retry.body).toEqual(made[0]);
      expect((await onB.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === body.content)).toHaveLength(1);
    } finally {
      await dying.kill();
    }
  });
  it("a tree's deletion killed before its answer was kept: B answers the deletion's 204 from the removal's row, replayed", async () => {
    const control = path.join(os.tmpdir(), `cardtree-hold-delete-${process.pid}-${Date.now()}`);
    const dying = await startTestServer({ env: { STORE: "postgres", DATABASE_URL: databaseUrl, CARDTREE_FAULTS_FILE: control } });
    try {
      const alice = await buildUser(dying.url);
      const tree = await buildTree(alice);
      const key = { "Idempotency-Key": "killed-after-delete" };
      await writeFile(control, "hold-answer");
      const lost = alice.delete(`/api/trees/${tree._id}`, key).then(
        () => "answered",
        () => "lost",
      );
      await vi.waitFor(() => expect(dying.output.some((line) => line.includes("fault: holding an answer"))).toBe(true), { timeout: 20_000, interval: 20 });
      await dying.kill();
      expect(await lost).toBe("lost");

      const onB = on(b, alice);
      // A's connections go with it, so B takes its claim over as soon as PostgreSQL has ended
      // them, not after the 30 s lease (test/postgres/dead-claims.test.ts): until then B answers
      // 409 with Retry-After, and a client sends again (on a loaded machine, the backends'
      // exit can take longer than the retry's way to B).
      const { reply: retry, tookMs } = await retryUntilAnswered(() => onB.delete(`/api/trees/${tree._id}`, key), 5_000);
      expect([retry.status, retry.headers.get("idempotent-replayed"), retry.text]).toEqual([204, "true", ""]);
      expect(tookMs).toBeLessThan(5_000);
      expect((await onB.get("/api/trees")).body).toEqual([]);
      expect(await sql("SELECT count(*)::integer AS n FROM cards WHERE tree_id = $1", [tree._id])).toEqual([{ n: 0 }]);
      // The answer rebuilt from the removal is kept (lazily: the removal stands for it).
      await vi.waitFor(async () => {
        const [kept] = await sql("SELECT claim, status FROM idempotency_keys WHERE user_id = $1 AND key = 'killed-after-delete'", [alice.user._id]);
        expect(kept).toEqual({ claim: null, status: 204 });
      });
    } finally {
      await dying.kill();
    }
  });
});
