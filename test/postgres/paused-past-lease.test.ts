/**
 * A keyed request of several steps whose process is paused past its claim's lease (SIGSTOP
 * here; a long GC or a VM's pause alike) on PostgreSQL (issue 26, SPEC §13; docs/decisions.md,
 * "A keyed commit checks its claim"): another process takes the claim over and runs what the
 * paused one had not committed. When the paused process wakes, its next step's commit finds
 * the claim no longer its own in the database and writes nothing, so each step is applied
 * once; its answer is one a client retries, and the retry is the other process's answer,
 * replayed.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { adminQuery, createTestDatabase } from "../helpers/postgres.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

/** A's lease: short, so that the test waits it out rather than 30 s. */
const LEASE_MS = 2_000;

let databaseUrl: string;
let a: TestServer;
let b: TestServer;
let control: string;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  control = path.join(os.tmpdir(), `cardtree-paused-${process.pid}-${Date.now()}`);
  const shared = { STORE: "postgres", DATABASE_URL: databaseUrl };
  [a, b] = await Promise.all([
    startTestServer({ env: { ...shared, CARDTREE_FAULTS_FILE: control, IDEMPOTENCY_LEASE_MS: String(LEASE_MS) } }),
    startTestServer({ env: shared }),
  ]);
});

afterAll(async () => {
  a?.process.kill("SIGCONT");
  await Promise.all([a?.stop(), b?.stop()]);
});

async function sql(query: string, params: unknown[] = []): Promise<any[]> {
  return (await adminQuery(query, databaseUrl, params)).rows;
}

/** Two card creations in one GraphQL document: two steps of one keyed request. */
const TWO_CARDS = `mutation Two($one: CreateCardInput!, $two: CreateCardInput!) {
  one: createCard(input: $one) { id content }
  two: createCard(input: $two) { id content }
}`;

async function twoCards(server: TestServer, api: Api, key: string, treeId: string) {
  const res = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: api.authHeader!, "Idempotency-Key": key },
    body: JSON.stringify({
      query: TWO_CARDS,
      variables: { one: { treeId, position: 1, content: "step one" }, two: { treeId, position: 2, content: "step two" } },
    }),
  });
  const text = await res.text();
  return { status: res.status, replayed: res.headers.get("idempotent-replayed"), text, body: JSON.parse(text) };
}

describe("a keyed request paused past its lease after its first step, on PostgreSQL", { timeout: 90_000 }, () => {
  it("is finished by the process that took its claim over, and the paused one's later step writes nothing: each card once, the retries replay one answer", async () => {
    const alice = await buildUser(a.url);
    const tree = await buildTree(alice);
    const onB = new Api(b.url, alice.credentials);
    const key = "paused-past-lease";

    // A commits step one, then is held before step two and paused (no renewal of its lease).
    await writeFile(control, "hold-step");
    const onA = twoCards(a, alice, key, tree._id);
    await vi.waitFor(() => expect(a.output.some((line) => line.includes("fault: holding a keyed request before its next step"))).toBe(true), {
      timeout: 20_000,
      interval: 20,
    });
    a.process.kill("SIGSTOP");
    const [{ lease_until }] = await sql("SELECT lease_until FROM idempotency_keys WHERE user_id = $1 AND key = $2", [alice.user._id, key]);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(lease_until) - Date.now()) + 200));

    // The client's retry reaches B, which takes the claim over, answers step one from A's
    // change and runs step two.
    const onBFirst = await twoCards(b, alice, key, tree._id);
    expect([onBFirst.status, onBFirst.body.errors]).toEqual([200, undefined]);
    const contents = async () => (await onB.get(`/api/trees/${tree._id}/cards`)).body.map((c: any) => c.content).filter((c: string) => c.startsWith("step"));
    expect((await contents()).sort()).toEqual(["step one", "step two"]);

    // A wakes and goes on to its step two.
    await writeFile(control, "release-step");
    a.process.kill("SIGCONT");
    const woken = await onA;
    expect((await contents()).sort()).toEqual(["step one", "step two"]);
    // Its answer is one a client retries (not kept): step two was not done here.
    expect(woken.body.errors?.map((e: any) => e.extensions.code)).toEqual(["unavailable"]);
    expect(woken.body.data?.two ?? null).toBeNull();

    // Every retry, on either process, is B's answer, replayed, and makes nothing.
    for (const server of [a, b, a]) {
      const retry = await twoCards(server, alice, key, tree._id);
      expect([retry.status, retry.replayed, retry.text]).toEqual([200, "true", onBFirst.text]);
    }
    expect((await contents()).sort()).toEqual(["step one", "step two"]);
  });

  it("does not run a later step that is not a change (preferences) once its claim was taken over: the user's change made since is kept", async () => {
    const alice = await buildUser(a.url);
    const tree = await buildTree(alice);
    const onB = new Api(b.url, alice.credentials);
    const key = "paused-preferences";
    const graphql = async (server: TestServer, query: string, variables: unknown, idempotencyKey?: string) => {
      const headers: Record<string, string> = { "content-type": "application/json", authorization: alice.authHeader! };
      if (idempotencyKey) headers["Idempotency-Key"] = idempotencyKey;
      const res = await fetch(`${server.url}/graphql`, { method: "POST", headers, body: JSON.stringify({ query, variables }) });
      const text = await res.text();
      return { status: res.status, replayed: res.headers.get("idempotent-replayed"), text, body: JSON.parse(text) };
    };
    const CARD_THEN_THEME = `mutation Two($one: CreateCardInput!) {
      one: createCard(input: $one) { id content }
      two: setPreferences(input: { theme: "dark" }) { theme }
    }`;
    const variables = { one: { treeId: tree._id, position: 1, content: "before the theme" } };
    const theme = async () => (await graphql(b, "{ me { preferences { theme } } }", {})).body.data.me.preferences.theme;

    const holding = () => a.output.filter((line) => line.includes("fault: holding a keyed request before its next step")).length;
    const heldBefore = holding();
    await writeFile(control, "hold-step");
    const onA = graphql(a, CARD_THEN_THEME, variables, key);
    await vi.waitFor(() => expect(holding()).toBe(heldBefore + 1), {
      timeout: 20_000,
      interval: 20,
    });
    a.process.kill("SIGSTOP");
    const [{ lease_until }] = await sql("SELECT lease_until FROM idempotency_keys WHERE user_id = $1 AND key = $2", [alice.user._id, key]);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(lease_until) - Date.now()) + 200));

    // B finishes the request; the user then picks another theme.
    const onBFirst = await graphql(b, CARD_THEN_THEME, variables, key);
    expect([onBFirst.status, onBFirst.body.errors, onBFirst.body.data.two]).toEqual([200, undefined, { theme: "dark" }]);
    expect((await graphql(b, `mutation { setPreferences(input: { theme: "light" }) { theme } }`, {})).body.data.setPreferences.theme).toBe("light");

    // A wakes: its step two finds the claim another's and writes nothing.
    await writeFile(control, "release-step");
    a.process.kill("SIGCONT");
    const woken = await onA;
    expect(woken.body.errors?.map((e: any) => e.extensions.code)).toEqual(["unavailable"]);
    expect(await theme()).toBe("light");
    const cards = (await onB.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === "before the theme");
    expect(cards).toHaveLength(1);
    const retry = await graphql(a, CARD_THEN_THEME, variables, key);
    expect([retry.status, retry.replayed, retry.text]).toEqual([200, "true", onBFirst.text]);
    expect(await theme()).toBe("light");
  });
});
