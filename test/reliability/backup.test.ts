/**
 * Backup while the server runs and restore (issue 7.6), end to end through the CLI:
 * backups taken under a write load, with compactions renaming the datafiles meanwhile,
 * restore into a fresh directory and serve every card answered before the backup began.
 */
import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { CLI_ARGS, freshDataDir, startTestServer, type TestServer } from "../helpers/server.js";
import { cardCreationLoad, cardsOf, expectValidTree } from "./tree-checks.js";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
const cli = (dataDir: string, ...args: string[]) =>
  run(process.execPath, [...CLI_ARGS, ...args], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir } });

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  servers = [];
});

describe("backup and restore", () => {
  it("a backup taken under load and compaction restores every card answered before it", async () => {
    const env = { LOG: "off", COMPACT_CHECK_MS: "50", COMPACT_MIN_LINES: "1", COMPACT_GARBAGE_RATIO: "0" };
    const server = await startTestServer({ env });
    servers.push(server);
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { seed: "# start" });
    const login = await new Api(server.url).post("/api/login", alice.credentials);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    const load = cardCreationLoad(alice, tree._id, 4);
    // The first backup starts once writes are flowing (a fixed wait saw only 5 answered on a
    // busy machine, and the check below failed).
    await expect.poll(() => load.answered.length, { timeout: 30_000 }).toBeGreaterThan(10);

    const backups: { dir: string; answeredBefore: string[] }[] = [];
    for (let i = 0; i < 2; i++) {
      const dir = path.join(await mkdtemp(path.join(os.tmpdir(), "cardtree-backup-")), "backup");
      const answeredBefore = [...load.answered];
      const { stdout } = await cli(server.dataDir, "backup", dir);
      expect(stdout).toContain("Backup of");
      backups.push({ dir, answeredBefore });
    }
    await load.stop();
    expect(backups[0].answeredBefore.length).toBeGreaterThan(10);

    // Restore refuses a directory a running server owns.
    await expect(cli(server.dataDir, "restore", backups[0].dir)).rejects.toMatchObject({ stderr: expect.stringContaining("in use") });

    for (const { dir, answeredBefore } of backups) {
      const target = await freshDataDir();
      const { stdout } = await cli(target, "restore", dir);
      expect(stdout).toContain("Restored");
      const restored = await startTestServer({ dataDir: target, env: { LOG: "off" } });
      servers.push(restored);
      const cards = await cardsOf(new Api(restored.url, alice.credentials), tree._id);
      const ids = new Set(cards.map((c) => c._id));
      expect(answeredBefore.filter((id) => !ids.has(id))).toEqual([]);
      expectValidTree(cards);
      // The secret came along: the cookie session still opens.
      expect((await new Api(restored.url).get("/api/index", { cookie })).status).toBe(200);
    }
  }, 120_000);

  it("a restored data directory that reaches the same revision again never answers 304 to a tag from before the restore", async () => {
    const server = await startTestServer({ env: { LOG: "off" } });
    servers.push(server);
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { seed: "# start" });
    const dir = path.join(await mkdtemp(path.join(os.tmpdir(), "cardtree-backup-")), "backup");
    await cli(server.dataDir, "backup", dir);
    // Written after the backup: lost by the restore.
    for (let i = 0; i < 3; i++) await buildCard(alice, tree._id, { content: `before the restore ${i}`, position: 10 + i });
    const before = await alice.get(`/api/trees/${tree._id}/cards`);
    const staleTag = before.headers.get("etag")!;
    expect(staleTag).toMatch(/^"\d+-/);
    await server.stop();

    const target = await freshDataDir();
    await cli(target, "restore", dir);
    const restored = await startTestServer({ dataDir: target, env: { LOG: "off" } });
    servers.push(restored);
    const again = new Api(restored.url, alice.credentials);
    // Other writes, as many: the tree is at the same revision number as the stale tag's.
    for (let i = 0; i < 3; i++) await buildCard(again, tree._id, { content: `after the restore ${i}`, position: 10 + i });
    const fresh = await again.get(`/api/trees/${tree._id}/cards`);
    expect(fresh.headers.get("etag")!.split("-")[0]).toBe(staleTag.split("-")[0]);

    const conditional = await again.get(`/api/trees/${tree._id}/cards`, { "if-none-match": staleTag });
    expect(conditional.status).toBe(200);
    expect(conditional.headers.get("etag")).not.toBe(staleTag);
    expect(conditional.body.map((c: any) => c.content)).toEqual(expect.arrayContaining(["after the restore 0", "after the restore 2"]));
    expect(conditional.body.map((c: any) => c.content)).not.toContain("before the restore 0");
  }, 120_000);

  it("a restore over a data directory forgets its kept idempotency answers: a retry then runs again", async () => {
    const dataDir = await freshDataDir();
    const server = await startTestServer({ dataDir, env: { LOG: "off" } });
    servers.push(server);
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const dir = path.join(await mkdtemp(path.join(os.tmpdir(), "cardtree-backup-")), "backup");
    await cli(dataDir, "backup", dir);
    const body = { treeId: tree._id, position: 1, content: "after the backup" };
    const key = { "Idempotency-Key": "after-backup" };
    expect((await alice.post(`/api/trees/${tree._id}/cards`, body, key)).status).toBe(201);
    await server.stop();
    servers = [];
    await cli(dataDir, "restore", dir);
    const restored = await startTestServer({ dataDir, env: { LOG: "off" } });
    servers.push(restored);
    const client = new Api(restored.url, alice.credentials);
    const retry = await client.post(`/api/trees/${tree._id}/cards`, body, key);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    expect((await cardsOf(client, tree._id)).filter((c) => c.content === "after the backup")).toHaveLength(1);
  }, 60_000);

  it("refuses a target directory that is not empty, and a source that is not a backup", async () => {
    const dataDir = await freshDataDir();
    await expect(cli(dataDir, "restore", dataDir)).rejects.toMatchObject({ stderr: expect.stringContaining("not a Cardtree backup") });
    await expect(cli(dataDir, "backup", ROOT)).rejects.toMatchObject({ code: 1 });
  }, 60_000);
});
