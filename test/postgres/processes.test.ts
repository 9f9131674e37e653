/**
 * Two server processes on one PostgreSQL database behave as one service (SPEC §11, issue
 * 17 "Many processes"): what is written through one is read through the other at once
 * (REST, with correct ETags), within a second from the other's GraphQL cache, and on both
 * processes' live streams (SSE, and the GraphQL subscription) in order without gap or duplicate; writes racing for one tree's
 * revision across processes all land; sessions, password changes and the log-in throttle
 * hold across both; the permission rules hold on the second process.
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { permissionFixture, ROLES, signUpPeople, type PermissionFixture, type Role } from "../helpers/permission-fixture.js";
import { adminQuery, createTestDatabase, withDatabase } from "../helpers/postgres.js";
import { CLI_ARGS, startTestServer, type TestServer } from "../helpers/server.js";
import { SseReader } from "../live/sse-client.js";

let databaseUrl: string;
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  // TRUST_PROXY: the throttle tests name their client addresses in X-Forwarded-For.
  const env = { STORE: "postgres", DATABASE_URL: databaseUrl, TRUST_PROXY: "1", SIGNUP_LIMIT_PER_ADDRESS: "30" };
  a = await startTestServer({ env });
  b = await startTestServer({ env });
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

/** The same user's client on the other process. */
function on(server: TestServer, api: Api): Api {
  return new Api(server.url, api.credentials);
}

async function sql(query: string): Promise<any[]> {
  return (await adminQuery(query, withDatabase(databaseUrl, new URL(databaseUrl).pathname.slice(1)))).rows;
}

/** Polls `probe` until it returns true; fails after `timeoutMs`. */
async function eventually(probe: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function graphql(api: Api, query: string, variables: Record<string, unknown>): Promise<any> {
  const res = await fetch(`${api.baseUrl}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: api.authHeader! },
    body: JSON.stringify({ query, variables }),
  });
  return res.json();
}

describe("two processes on one database", { timeout: 60_000 }, () => {
  it("read through B what was written through A at once, with ETags that change with it", async () => {
    const ownerA = await buildUser(a.url, "etag");
    const ownerB = on(b, ownerA);
    const tree = await buildTree(ownerA, { name: "Shared" });
    const first = await ownerB.get(`/api/trees/${tree._id}/cards`);
    expect(first.status).toBe(200);
    const etag = first.headers.get("etag")!;
    expect((await ownerB.get(`/api/trees/${tree._id}/cards`, { "if-none-match": etag })).status).toBe(304);

    const card = await buildCard(ownerA, tree._id, { content: "written through A", position: 9 });
    const after = await ownerB.get(`/api/trees/${tree._id}/cards`, { "if-none-match": etag });
    expect(after.status).toBe(200);
    expect(after.body.map((c: any) => c.content)).toContain("written through A");
    const newTag = after.headers.get("etag")!;
    expect(newTag).not.toBe(etag);
    // Both processes name the same revision with the same tag.
    expect((await ownerA.get(`/api/trees/${tree._id}/cards`)).headers.get("etag")).toBe(newTag);

    expect((await ownerB.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "edited through B" })).status).toBe(200);
    const backOnA = await ownerA.get(`/api/trees/${tree._id}/cards`, { "if-none-match": newTag });
    expect(backOnA.status).toBe(200);
    expect(backOnA.body.find((c: any) => c._id === card._id).content).toBe("edited through B");
  });

  it("serve B's GraphQL results fresh within a second of a write through A", async () => {
    const ownerA = await buildUser(a.url, "gql");
    const ownerB = on(b, ownerA);
    const tree = await buildTree(ownerA, { name: "Cached" });
    const query = "query ($id: ID!) { tree(id: $id) { name cards { content } } }";
    const contents = async () => ((await graphql(ownerB, query, { id: tree._id })).data.tree.cards as any[]).map((c) => c.content);
    // Twice: the second is answered from B's result cache.
    expect(await contents()).toEqual([""]);
    expect(await contents()).toEqual([""]);

    await buildCard(ownerA, tree._id, { content: "from A", position: 5 });
    await eventually(async () => (await contents()).includes("from A"), 1_000, "B's GraphQL shows A's card");
    expect((await ownerA.put(`/api/trees/${tree._id}`, { name: "Renamed on A" })).status).toBe(200);
    await eventually(
      async () => (await graphql(ownerB, query, { id: tree._id })).data.tree.name === "Renamed on A",
      1_000,
      "B's GraphQL shows A's rename",
    );
  });

  it("stream every change of both processes on both, in order, without gap or duplicate", async () => {
    const ownerA = await buildUser(a.url, "live");
    const ownerB = on(b, ownerA);
    const tree = await buildTree(ownerA, { name: "Live" });
    const headers = { authorization: ownerA.authHeader! };
    const streamA = await SseReader.open(a.url, `/api/trees/${tree._id}/events`, headers);
    const streamB = await SseReader.open(b.url, `/api/trees/${tree._id}/events`, headers);
    // And the GraphQL subscription on B.
    const subscription = await SseReader.open(
      b.url,
      "/graphql",
      { ...headers, accept: "text/event-stream", "content-type": "application/json" },
      "POST",
      JSON.stringify({ query: "subscription ($t: ID!) { treeChanged(treeId: $t) { revision cards { content } } }", variables: { t: tree._id } }),
    );
    expect([streamA.status, streamB.status, subscription.status]).toEqual([200, 200, 200]);
    try {
      const writes = 12;
      for (let i = 0; i < writes; i++) {
        await buildCard(i % 2 === 0 ? ownerA : ownerB, tree._id, { content: `card ${i}`, position: i });
      }
      for (const stream of [streamA, streamB]) {
        const changes = await stream.waitFor(writes);
        expect(changes.map((c) => c.revision)).toEqual(Array.from({ length: writes }, (_, i) => tree.revision + 1 + i));
        expect(changes.map((c) => c.cards[0].content)).toEqual(Array.from({ length: writes }, (_, i) => `card ${i}`));
      }
      const subscribed = (await subscription.waitFor(writes, "next")).map((e) => e.data.treeChanged);
      expect(subscribed.map((c) => c.revision)).toEqual(Array.from({ length: writes }, (_, i) => tree.revision + 1 + i));
      expect(subscribed.map((c) => c.cards[0].content)).toEqual(Array.from({ length: writes }, (_, i) => `card ${i}`));
      // Nothing more arrives (no duplicate delivered late).
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(streamA.data()).toHaveLength(writes);
      expect(streamB.data()).toHaveLength(writes);
      expect(subscription.data("next")).toHaveLength(writes);

      // A tree deleted through A ends B's stream.
      expect((await ownerA.delete(`/api/trees/${tree._id}`)).status).toBe(204);
      await streamB.waitForEnd();
    } finally {
      streamA.close();
      streamB.close();
      subscription.close();
    }
  });

  it("carry a write of the CLI, made while both servers run, to the streams of both", async () => {
    const owner = await buildUser(a.url, "cli");
    const tree = await buildTree(owner, { name: "Imported into" });
    const headers = { authorization: owner.authHeader! };
    const streams = [
      await SseReader.open(a.url, `/api/trees/${tree._id}/events`, headers),
      await SseReader.open(b.url, `/api/trees/${tree._id}/events`, headers),
    ];
    try {
      const file = path.join(a.dataDir, "seed.md");
      await writeFile(file, "# from the command line\n\nimported while serving\n");
      await promisify(execFile)(process.execPath, [...CLI_ARGS, "import", file, "--tree", tree._id], {
        cwd: path.resolve(import.meta.dirname, "../.."),
        env: { ...process.env, STORE: "postgres", DATABASE_URL: databaseUrl },
      });
      for (const stream of streams) {
        const [change] = await stream.waitFor(1);
        expect(change).toMatchObject({ revision: tree.revision + 1, kind: "import" });
        expect(change.cards.some((c: { content: string }) => c.content.includes("imported while serving"))).toBe(true);
      }
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it("land every write of two processes racing for one tree's revisions (the domain retries the loser)", async () => {
    const ownerA = await buildUser(a.url, "race");
    const ownerB = on(b, ownerA);
    const tree = await buildTree(ownerA, { name: "Raced" });
    const each = 15;
    const replies = await Promise.all(
      Array.from({ length: each * 2 }, (_, i) =>
        (i % 2 === 0 ? ownerA : ownerB).post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: i, content: `raced ${i}` }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(replies.map(() => 201));
    const cards = (await ownerB.get(`/api/trees/${tree._id}/cards`)).body;
    expect(cards.filter((c: any) => c.content.startsWith("raced"))).toHaveLength(each * 2);
    // The change log agrees: one change per write, revisions without a gap.
    const revisions = (await sql(`SELECT revision FROM changes WHERE tree_id = '${tree._id}' ORDER BY revision`)).map((r) => r.revision);
    expect(revisions).toEqual(Array.from({ length: each * 2 + 1 }, (_, i) => i + 1));
  });

  it("still answer 409 to a conditional write through B whose card was changed through A", async () => {
    const ownerA = await buildUser(a.url, "cond");
    const ownerB = on(b, ownerA);
    const tree = await buildTree(ownerA, { name: "Versions" });
    const card = await buildCard(ownerA, tree._id, { content: "v0" });
    expect((await ownerA.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "v1" }, { "if-match": '"0"' })).status).toBe(200);
    const stale = await ownerB.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "lost?" }, { "if-match": '"0"' });
    expect(stale.status).toBe(409);
    expect(stale.body.details.current.content).toBe("v1");
    expect((await ownerB.get(`/api/trees/${tree._id}/cards`)).body.find((c: any) => c._id === card._id).content).toBe("v1");
  });

  it("apply SPEC §3 on B to trees shared and published through A", async () => {
    type Expected = Record<Role, number>;
    const ok = (status: number): Expected => ({ owner: status, collaborator: status, other: 404, anonymous: 401 });
    const readable = (status: number): Expected => ({ owner: status, collaborator: status, other: status, anonymous: 401 });
    const cases: { name: string; call: (api: Api, f: PermissionFixture) => Promise<{ status: number }>; private: Expected; public: Expected }[] = [
      { name: "GET cards", call: (x, f) => x.get(`/api/trees/${f.tree._id}/cards`), private: ok(200), public: readable(200) },
      { name: "GET collaborators", call: (x, f) => x.get(`/api/trees/${f.tree._id}/collaborators`), private: ok(200), public: ok(200) },
      { name: "GET history", call: (x, f) => x.get(`/api/trees/${f.tree._id}/history`), private: ok(200), public: readable(200) },
      { name: "GET card versions", call: (x, f) => x.get(`/api/trees/${f.tree._id}/cards/${f.card._id}/versions`), private: ok(200), public: readable(200) },
      { name: "GET trash", call: (x, f) => x.get(`/api/trees/${f.tree._id}/trash`), private: ok(200), public: readable(200) },
      { name: "POST card", call: (x, f) => x.post(`/api/trees/${f.tree._id}/cards`, { treeId: f.tree._id, position: 9 }), private: ok(201), public: ok(201) },
      { name: "PUT card", call: (x, f) => x.put(`/api/trees/${f.tree._id}/cards/${f.card._id}`, { content: "changed on B" }), private: ok(200), public: ok(200) },
      {
        name: "PUT tree publicUrl",
        call: (x, f) => x.put(`/api/trees/${f.tree._id}`, { publicUrl: `b-${f.tree._id}` }),
        private: { owner: 200, collaborator: 403, other: 404, anonymous: 401 },
        public: { owner: 200, collaborator: 403, other: 404, anonymous: 401 },
      },
    ];
    const people = await signUpPeople(a.url);
    for (const visibility of ["private", "public"] as const) {
      const fixture = await permissionFixture(a.url, visibility === "public", people);
      for (const testCase of cases) {
        for (const role of ROLES) {
          const api = role === "anonymous" ? new Api(b.url) : on(b, fixture.roles[role]);
          const { status } = await testCase.call(api, fixture);
          expect(status, `${testCase.name} as ${role} on a ${visibility} tree, through B`).toBe(testCase[visibility][role]);
        }
      }
    }

    // A collaborator removed through A is refused through B at once.
    const fixture = await permissionFixture(a.url, false, people);
    const path = `/api/trees/${fixture.tree._id}/cards`;
    expect((await on(b, people.collaborator).get(path)).status).toBe(200);
    expect((await people.owner.delete(`/api/trees/${fixture.tree._id}/collaborators/${people.collaborator.user._id}`)).status).toBe(204);
    expect((await on(b, people.collaborator).get(path)).status).toBe(404);
  });

  it("hold an owner's card limit across processes adding cards at once", async () => {
    const ownerA = await buildUser(a.url, "limit");
    const ownerB = on(b, ownerA);
    // The operator sets the limit with the CLI, on the same database, while both servers run.
    await promisify(execFile)(process.execPath, [...CLI_ARGS, "user", "limit", ownerA.user.email, "40"], {
      cwd: path.resolve(import.meta.dirname, "../.."),
      env: { ...process.env, STORE: "postgres", DATABASE_URL: databaseUrl },
    });
    // Two trees (one card each), so the writes do not queue behind one tree's revisions.
    const trees = [await buildTree(ownerA, { name: "Limited one" }), await buildTree(ownerB, { name: "Limited two" })];
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => {
        const [api, tree] = i % 2 === 0 ? [ownerA, trees[0]] : [ownerB, trees[1]];
        return api.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: i, content: `card ${i}` });
      }),
    );
    expect(replies.filter((r) => r.status === 201)).toHaveLength(38);
    expect(replies.filter((r) => r.status === 422).map((r) => r.body.error)).toEqual(Array(12).fill("limit_reached"));
    expect((await ownerB.get("/api/index")).body.cardsCount).toBe(40);
  });

  it("keep a cookie session across processes: log in on A, use it on B, log out on A and B refuses it", async () => {
    const user = await buildUser(a.url, "session");
    const login = await new Api(a.url).post("/api/login", user.credentials);
    expect(login.status).toBe(200);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    const onB = new Api(b.url);
    const index = await onB.get("/api/index", { cookie });
    expect(index.status).toBe(200);
    expect(index.body.csrf).toBe(login.body.csrf);
    expect((await onB.post("/api/trees", { name: "no token" }, { cookie })).status).toBe(403);
    expect((await onB.post("/api/trees", { name: "with token" }, { cookie, "x-csrf-token": login.body.csrf })).status).toBe(201);

    expect((await new Api(a.url).post("/api/logout", undefined, { cookie, "x-csrf-token": login.body.csrf })).status).toBe(204);
    expect((await onB.get("/api/index", { cookie })).status).toBe(401);
  });

  it("refuse on B the old password of a password changed on A (basic credentials cached on B)", async () => {
    const user = await buildUser(a.url, "password");
    const onB = on(b, user);
    expect((await onB.get("/api/index")).status).toBe(200); // B has verified (and cached) it
    const changed = await user.put("/api/index", { currentPassword: user.credentials!.password, newPassword: "a brand new secret" });
    expect(changed.status).toBe(200);
    expect((await onB.get("/api/index")).status).toBe(401);
    expect((await new Api(b.url, { email: user.credentials!.email, password: "a brand new secret" }).get("/api/index")).status).toBe(200);
  });

  it("refuse on B a tree's card list with the old password of a password changed on A, and to a collaborator removed on A", async () => {
    const user = await buildUser(a.url, "cards-reader");
    const reader = await buildUser(a.url, "cards-collaborator");
    const tree = await buildTree(user, { seed: "# One\n\n# Two" });
    expect((await user.post(`/api/trees/${tree._id}/collaborators`, { email: reader.user.email })).status).toBe(201);
    const cards = `/api/trees/${tree._id}/cards`;
    // B verifies both, and reads the list twice (the second from its caches).
    for (let i = 0; i < 2; i++) {
      expect((await on(b, user).get(cards, { "accept-encoding": "br" })).status).toBe(200);
      expect((await on(b, reader).get(cards)).status).toBe(200);
    }
    expect((await user.put("/api/index", { currentPassword: user.credentials!.password, newPassword: "a brand new secret" })).status).toBe(200);
    expect((await on(b, user).get(cards, { "accept-encoding": "br" })).status).toBe(401);
    expect((await new Api(b.url, { email: user.credentials!.email, password: "a brand new secret" }).get(cards)).status).toBe(200);

    const owner = new Api(a.url, { email: user.credentials!.email, password: "a brand new secret" });
    expect((await owner.delete(`/api/trees/${tree._id}/collaborators/${reader.user._id}`)).status).toBe(204);
    expect((await on(b, reader).get(cards)).status).toBe(404);
  });

  it("refuse on B card writes with the old password of a password changed on A, or of an account removed (logins B took from its cache)", async () => {
    const user = await buildUser(a.url, "cached-writer");
    const tree = await buildTree(user);
    const onB = on(b, user);
    const write = (position: number) => onB.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position, content: `through B ${position}` });
    // B verifies the credentials, then takes them from its cache for card writes.
    expect((await onB.get("/api/index")).status).toBe(200);
    expect((await write(1)).status).toBe(201);
    const card = (await write(2)).body;

    expect((await user.put("/api/index", { currentPassword: user.credentials!.password, newPassword: "a brand new secret" })).status).toBe(200);
    const refused = [
      await write(3),
      await onB.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: "not written" }),
      await onB.delete(`/api/trees/${tree._id}/cards/${card._id}`),
      await onB.post(`/api/trees/${"b".repeat(24)}/cards`, { treeId: "b".repeat(24), position: 0 }),
    ];
    expect(refused.map((r) => r.status)).toEqual([401, 401, 401, 401]);
    const renewed = new Api(b.url, { email: user.credentials!.email, password: "a brand new secret" });
    expect((await renewed.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 4, content: "new password" })).status).toBe(201);
    const contents = (await renewed.get(`/api/trees/${tree._id}/cards`)).body.map((c: any) => c.content);
    expect(contents).toContain("through B 2");
    expect(contents).not.toContain("through B 3");
    expect(contents).not.toContain("not written");

    // An account removed outside both servers (there is no API for it): B's cached log-in no longer holds.
    const gone = await buildUser(a.url, "removed-writer");
    const goneTree = await buildTree(gone);
    const goneOnB = on(b, gone);
    const goneWrite = () => goneOnB.post(`/api/trees/${goneTree._id}/cards`, { treeId: goneTree._id, position: 1, content: "after removal" });
    expect((await goneWrite()).status).toBe(201);
    await sql(`DELETE FROM users WHERE id = '${gone.user._id}'`);
    expect((await goneWrite()).status).toBe(401);
    const rows = await sql(`SELECT count(*)::int AS n FROM cards WHERE tree_id = '${goneTree._id}' AND record->>'content' = 'after removal'`);
    expect(rows[0].n).toBe(1);
  });

  it("refuse on B a keyed card write with the old password of a password changed on A: no replay of the key's answer, nothing kept for it", async () => {
    const user = await buildUser(a.url, "keyed-writer");
    const tree = await buildTree(user);
    const onB = on(b, user);
    const keyed = (api: Api, key: string, content: string) =>
      api.request("POST", `/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 9, content }, { "idempotency-key": key });
    // B verifies the credentials, then takes them from its cache for card writes, keyed ones too.
    expect((await onB.get("/api/index")).status).toBe(200);
    expect((await keyed(onB, "cached", "through B")).status).toBe(201);
    // Answered through A, so B has nothing of it in memory: B meets the kept answer in the table.
    const made = await keyed(user, "answered-on-a", "made once");
    expect(made.status).toBe(201);
    await eventually(async () => (await sql(`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = 'answered-on-a' AND status IS NOT NULL`))[0].n === 1, 5_000, "the answer kept");

    expect((await user.put("/api/index", { currentPassword: user.credentials!.password, newPassword: "a brand new secret" })).status).toBe(200);
    const replayToOld = await keyed(onB, "answered-on-a", "made once");
    expect(replayToOld.status).toBe(401);
    expect(replayToOld.headers.get("idempotent-replayed")).toBeNull();
    expect((await keyed(onB, "refused-on-b", "not written")).status).toBe(401);

    const renewed = new Api(b.url, { email: user.credentials!.email, password: "a brand new secret" });
    const replay = await keyed(renewed, "answered-on-a", "made once");
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const run = await keyed(renewed, "refused-on-b", "written once");
    expect(run.status).toBe(201);
    expect(run.headers.get("idempotent-replayed")).toBeNull();
    const contents = (await renewed.get(`/api/trees/${tree._id}/cards`)).body.map((c: any) => c.content);
    expect(contents.filter((c: string) => c === "made once")).toHaveLength(1);
    expect(contents).toContain("written once");
    expect(contents).not.toContain("not written");
  });

  it("count failed log-ins through both processes against one limit", async () => {
    const user = await buildUser(a.url, "throttle");
    const wrong = { email: user.credentials!.email, password: "not the password" };
    // One account from one address, through both processes in turn.
    for (let i = 0; i < 10; i++) {
      const server = i % 2 === 0 ? a : b;
      const res = await new Api(server.url).post("/api/login", wrong, { "x-forwarded-for": "198.51.100.1" });
      expect(res.status).toBe(401);
    }
    // Five failures on each process; ten between them is the limit, on both (for a password
    // neither has verified: the user signed up and never logged in). Each process hears the
    // other's failures by a notice; the right password must not be tried before it can have
    // arrived, since a process that accepts it once trusts it from then on (login-throttle.ts),
    // which the full suite's load made happen once.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (const server of [a, b]) {
      await eventually(
        async () =>
          (await new Api(server.url).post("/api/login", user.credentials, { "x-forwarded-for": "198.51.100.1" })).status === 429,
        2_000,
        "the right password refused after ten failures across processes",
      );
    }
  });

  it("count sign-ups through both processes against one address's budget", async () => {
    const from = { "x-forwarded-for": "198.51.100.77" };
    for (let i = 0; i < 30; i++) {
      const server = i % 2 === 0 ? a : b;
      const res = await new Api(server.url).post("/api/signup", { email: `budget-${i}-${Date.now()}@example.test`, password: "long enough" }, from);
      expect(res.status).toBe(201);
    }
    // Fifteen through each; thirty between them is the budget, on both.
    for (const server of [a, b]) {
      await eventually(
        async () =>
          (await new Api(server.url).post("/api/signup", { email: `over-${Date.now()}@example.test`, password: "long enough" }, from)).status === 429,
        2_000,
        "a sign-up refused once the address's budget is spent across processes",
      );
    }
  });
});
