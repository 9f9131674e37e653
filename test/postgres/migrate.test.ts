/**
 * `npm run cli -- migrate --to postgres` (SPEC §11): an embedded data directory, written by
 * a real server, copied into an empty database and verified; a second run refuses the
 * now non-empty database unless --force; a server on the database then answers as the
 * embedded one did, cookie sessions included.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { createTestDatabase } from "../helpers/postgres.js";
import { CLI_ARGS, freshDataDir, startTestServer } from "../helpers/server.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

function migrate(dataDir: string, databaseUrl: string, ...flags: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [...CLI_ARGS, "migrate", "--to", "postgres", ...flags],
      { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir, DATABASE_URL: databaseUrl, STORE: "" } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("migrate --to postgres", { timeout: 120_000 }, () => {
  it("copies a data directory into an empty database, verified, and the service reads it as before", async () => {
    const dataDir = await freshDataDir();
    const embedded = await startTestServer({ dataDir, env: { STORE: "nedb" } });
    const ann = await buildUser(embedded.url, "ann");
    const login = await new Api(embedded.url).post("/api/login", ann.credentials);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    const tree = await buildTree(ann, { name: "Moved", seed: "# One\n\ntext \u0000 with a NUL\n\n## Two\n\n# Three" });
    const extra = await buildCard(ann, tree._id, { content: "to the trash", position: 9 });
    expect((await ann.delete(`/api/trees/${tree._id}/cards/${extra._id}`)).status).toBe(200);
    expect((await ann.put(`/api/trees/${tree._id}`, { publicUrl: "moved-tree" })).status).toBe(200);
    const before = {
      trees: (await ann.get("/api/trees")).body,
      cards: (await ann.get(`/api/trees/${tree._id}/cards`)).body,
    };
    await embedded.stop();

    const databaseUrl = await createTestDatabase();
    const copied = await migrate(dataDir, databaseUrl);
    expect(copied.stderr).toBe("");
    expect(copied.code).toBe(0);
    expect(copied.stdout).toMatch(/^cards: 4 in .*, 4 in the database$/m);
    expect(copied.stdout).toMatch(/^trees verified by checksum: 1$/m);
    expect(copied.stdout).toContain("Cookie sessions stay valid.");

    const again = await migrate(dataDir, databaseUrl);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already holds \d+ records.*--force/);
    const forced = await migrate(dataDir, databaseUrl, "--force");
    expect(forced.code).toBe(0);
    expect(forced.stdout).toMatch(/verified it/);

    const onPostgres = await startTestServer({ dataDir, env: { STORE: "postgres", DATABASE_URL: databaseUrl } });
    try {
      const again = new Api(onPostgres.url, ann.credentials);
      expect((await again.get("/api/trees")).body).toEqual(before.trees);
      expect((await again.get(`/api/trees/${tree._id}/cards`)).body).toEqual(before.cards);
      expect((await again.anonymous().get("/api/public/moved-tree")).status).toBe(200);
      const bySession = await again.anonymous().get("/api/index", { cookie });
      expect(bySession.status).toBe(200);
      expect(bySession.body.email).toBe(ann.credentials!.email);
      // Writes continue the tree's revisions where the embedded store left them.
      expect((await buildCard(again, tree._id, { content: "after the move" })).content).toBe("after the move");
    } finally {
      await onPostgres.stop();
    }
  });

  it("says what it needs when DATABASE_URL is missing", async () => {
    const dataDir = await freshDataDir();
    const noUrl = await migrate(dataDir, "");
    expect(noUrl.code).toBe(1);
    expect(noUrl.stderr).toMatch(/Set DATABASE_URL/);
  });
});
