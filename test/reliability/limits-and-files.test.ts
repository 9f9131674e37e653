/**
 * Write limits that hold under concurrency and file modes (issue 12): the card limit is
 * one count across all of a user's trees even when imports, clones and creates race; no
 * card larger than a PUT can carry back is ever accepted (REST, import, GraphQL, clone);
 * the data directory, its files and backups are private to the service's user; download
 * file names carry no bidi or control characters.
 */
import { execFile } from "node:child_process";
import { chmod, readdir, stat } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTree, buildUser } from "../helpers/api.js";
import { CLI_ARGS, freshDataDir, startTestServer, type TestServer } from "../helpers/server.js";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
const cli = (dataDir: string, ...args: string[]) =>
  run(process.execPath, [...CLI_ARGS, ...args], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir } });

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: { CARD_LIMIT: "100", LOG: "off" } });
}, 60_000);
afterAll(() => server.stop());

const seedOf = (cards: number) => Array.from({ length: cards }, (_, i) => `# card ${i}`).join("\n\n");

describe("the card limit under concurrency", () => {
  it("imports, clones and creates racing across one user's trees never take it past its limit", async () => {
    const alice = await buildUser(server.url, "alice");
    const trees = [];
    for (let i = 0; i < 8; i++) trees.push(await buildTree(alice, { name: `tree ${i}` }));
    const replies = await Promise.all([
      ...trees.flatMap((tree) => [
        alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: null, seed: seedOf(15) }),
        alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: null, seed: seedOf(9) }),
        alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 99 }),
      ]),
      alice.post(`/api/trees/${trees[0]._id}/clone`),
      alice.post("/api/trees", { name: "seeded", seed: seedOf(12) }),
      alice.post("/graphql", { query: `mutation { importSeed(treeId: "${trees[1]._id}", input: {seed: "# a\\n\\n# b\\n\\n# c"}) { id } }` }),
    ]);
    expect(replies.every((r) => r.status < 500)).toBe(true);
    expect(replies.some((r) => r.status === 422)).toBe(true);
    const me = (await alice.get("/api/index")).body;
    expect(me.cardsCount).toBeLessThanOrEqual(100);
    // What the answers acknowledged is what is there: refused writes left nothing.
    let owned = 0;
    for (const tree of (await alice.get("/api/trees")).body) owned += (await alice.get(`/api/trees/${tree._id}/cards`)).body.length;
    expect(owned).toBe(me.cardsCount);
  }, 60_000);
});

describe("one card size limit", () => {
  it("an import cannot make a card that PUT could not save back", async () => {
    const alice = await buildUser(server.url, "big");
    const tree = await buildTree(alice);
    const huge = `# Heading\n\n${"word ".repeat(1024 * 1024)}`;
    const res = await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: null, seed: huge });
    expect(res.status).toBe(413);
    expect(res.body.error).toBe("payload_too_large");
    const json = await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: null, seed: JSON.stringify([{ content: "x".repeat(200_000) }]) });
    expect(json.status).toBe(413);
    expect((await alice.post("/api/trees", { name: "seeded", seed: huge })).status).toBe(413);
    const gql = await alice.post("/graphql", {
      query: "mutation($t: ID!, $c: String!) { createCard(input: {treeId: $t, position: 1, content: $c}) { id } }",
      variables: { t: tree._id, c: "y".repeat(200_000) },
    });
    expect(gql.body.errors?.[0]?.extensions?.code).toBe("payload_too_large");
    expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(1);
  }, 60_000);

  it("the largest card accepted, in the worst case for JSON escaping, saves back through PUT", async () => {
    const alice = await buildUser(server.url, "big");
    const tree = await buildTree(alice);
    // Control characters cost 6 bytes each in JSON ("\u0001").
    const worst = "\u0001".repeat(100_000);
    const created = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: worst });
    expect(created.status).toBe(201);
    const saved = await alice.put(`/api/trees/${tree._id}/cards/${created.body._id}`, { ...created.body, position: 2 });
    expect(saved.status).toBe(200);
    const over = await alice.post(`/api/trees/${tree._id}/cards`, { treeId: tree._id, position: 1, content: `${worst}x` });
    expect(over.status).toBe(413);
    const edit = await alice.put(`/api/trees/${tree._id}/cards/${created.body._id}`, { content: `${worst}x` });
    expect(edit.status).toBe(413);
    // The same limit through an import whose one card is just over it.
    const seeded = await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: null, seed: "z".repeat(100_001) });
    expect(seeded.status).toBe(413);
    expect((await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: null, seed: "z".repeat(100_000) })).status).toBe(201);
  }, 60_000);
});

describe("file modes", () => {
  async function expectPrivate(dir: string) {
    expect(((await stat(dir)).mode & 0o777).toString(8), dir).toBe("700");
    for (const name of await readdir(dir)) {
      // A compaction's temporary file can be renamed in between the listing and the look: gone is not readable.
      const info = await stat(path.join(dir, name)).catch((err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return null;
        throw err;
      });
      if (info) expect((info.mode & 0o777).toString(8), name).toBe(info.isDirectory() ? "700" : "600");
    }
  }

  it("the data directory, datafiles, settings, lock, compacted files and backups are private; existing ones are tightened", async () => {
    const dataDir = await freshDataDir();
    await chmod(dataDir, 0o755);
    const env = { LOG: "off", COMPACT_CHECK_MS: "50", COMPACT_MIN_LINES: "1", COMPACT_GARBAGE_RATIO: "0" };
    let s = await startTestServer({ dataDir, env });
    try {
      const alice = await buildUser(s.url);
      const tree = await buildTree(alice, { seed: seedOf(20) });
      for (let i = 0; i < 5; i++) await alice.put(`/api/trees/${tree._id}`, { name: `renamed ${i}` });
      // Let a few compactions rename new files in.
      await new Promise((resolve) => setTimeout(resolve, 400));
      await expectPrivate(dataDir);
      const backup = path.join(await freshDataDir(), "backup");
      await cli(dataDir, "backup", backup);
      await expectPrivate(backup);
      await s.stop();
      // The clean stop rewrites every file once more.
      await expectPrivate(dataDir);
      // Files left world-readable by an older version are tightened when the store opens.
      for (const name of await readdir(dataDir)) await chmod(path.join(dataDir, name), 0o644);
      await chmod(dataDir, 0o755);
      s = await startTestServer({ dataDir, env });
      await expectPrivate(dataDir);
    } finally {
      await s.stop();
    }
  }, 90_000);
});

describe("download file names", () => {
  it("carry no bidi override or other control characters, in either form", async () => {
    const alice = await buildUser(server.url, "names");
    const tree = await buildTree(alice, { name: "invoice\u202Egpj.exe \u2066x\u2069\u200F" });
    const res = await alice.get(`/api/export/${tree._id}.txt`);
    expect(res.status).toBe(200);
    const header = res.headers.get("content-disposition")!;
    expect(header).toMatch(/^[\x20-\x7e]+$/);
    const encoded = /filename\*=UTF-8''(.*)$/.exec(header)![1];
    const decoded = decodeURIComponent(encoded);
    expect(decoded).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C\p{Cc}]/u);
    expect(decoded).toBe("invoicegpj.exe x.txt");
    expect(header).toContain('filename="invoicegpj.exe x.txt"');
    // The name GraphQL hands out for the same export, which a client may save under.
    const gql = await alice.post("/graphql", { query: `query ($id: ID!) { tree(id: $id) { export(format: TXT) { filename } } }`, variables: { id: tree._id } });
    expect(gql.body.data.tree.export.filename).toBe("invoicegpj.exe x.txt");
  });
});
