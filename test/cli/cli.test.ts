/**
 * The CLI against a real data directory, and the server started on it afterwards.
 */
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Api } from "../helpers/api.js";
import { CLI_ARGS, freshDataDir, startTestServer } from "../helpers/server.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

function cli(dataDir: string, args: string[], input?: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      [...CLI_ARGS, ...args],
      { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    if (input !== undefined) child.stdin!.end(input);
    else child.stdin!.end();
  });
}

// Each CLI run is a fresh Node process with tsx, and each server start a fresh process: seconds each.
describe("npm run cli", { timeout: 120_000 }, () => {
  it("adds users (password from stdin or --password), lists them, changes a password", async () => {
    const dataDir = await freshDataDir();
    const added = await cli(dataDir, ["user", "add", "Ada@Example.com"], "first password\n");
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/Added ada@example\.com/);
    expect((await cli(dataDir, ["user", "add", "bob@example.com", "--password", "bobs password", "--limit", "10"])).code).toBe(0);
    const dup = await cli(dataDir, ["user", "add", "ada@example.com", "--password", "whatever1"]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists/);
    const list = await cli(dataDir, ["user", "list"]);
    expect(list.stdout).toMatch(/ada@example\.com .*limit=-1/);
    expect(list.stdout).toMatch(/bob@example\.com .*limit=10/);
    expect((await cli(dataDir, ["user", "passwd", "ada@example.com", "--password", "second password"])).code).toBe(0);
    expect((await cli(dataDir, ["user", "limit", "bob@example.com", "25"])).code).toBe(0);
    const badLimit = await cli(dataDir, ["user", "add", "carol@example.com", "--password", "carols password", "--limit", "lots"]);
    expect(badLimit.code).not.toBe(0);
    expect(badLimit.stderr).toMatch(/limit must be a whole number/);
    const after = await cli(dataDir, ["user", "list"]);
    expect(after.stdout).toMatch(/bob@example\.com .*limit=25/);
    // A refused limit adds nobody.
    expect(after.stdout).not.toMatch(/carol@example\.com/);

    const server = await startTestServer({ dataDir, env: { SIGNUP: "off" } });
    try {
      expect((await new Api(server.url, { email: "ada@example.com", password: "first password" }).get("/api/index")).status).toBe(401);
      expect((await new Api(server.url, { email: "ada@example.com", password: "second password" }).get("/api/index")).status).toBe(200);
      // While the server runs, the CLI refuses the directory instead of corrupting it.
      const busy = await cli(dataDir, ["user", "list"]);
      expect(busy.code).not.toBe(0);
      expect(busy.stderr).toMatch(/in use/);
    } finally {
      await server.stop();
    }
  });

  it("imports a Markdown file into a tree and exports it back", async () => {
    const dataDir = await freshDataDir();
    await cli(dataDir, ["user", "add", "ada@example.com", "--password", "a long password"]);
    let server = await startTestServer({ dataDir });
    const ada = new Api(server.url, { email: "ada@example.com", password: "a long password" });
    const tree = (await ada.post("/api/trees", { name: "Notes" })).body;
    await server.stop();

    const file = path.join(dataDir, "notes.md");
    await writeFile(file, "# One\n\nText.\n\n## Two\n\nMore.");
    const imported = await cli(dataDir, ["import", file, "--tree", tree._id]);
    expect(imported.code).toBe(0);
    expect(imported.stdout).toMatch(/Imported 2 cards/);
    expect(imported.stderr).toMatch(/100%/);

    const out = path.join(dataDir, "out.md");
    const exported = await cli(dataDir, ["export", tree._id, "--format", "md", "-o", out]);
    expect(exported.code).toBe(0);
    expect(await readFile(out, "utf8")).toBe("\n\n# One\n\nText.\n\n## Two\n\nMore.");

    expect((await cli(dataDir, ["import", file, "--tree", "zzzzzzzzzzzzzzzzzzzzzzzz"])).code).toBe(1);
    expect((await cli(dataDir, ["export", tree._id, "--format", "pdf"])).code).toBe(1);
    expect((await cli(dataDir, ["frobnicate"])).code).toBe(2);

    server = await startTestServer({ dataDir });
    try {
      const after = await new Api(server.url, ada.credentials).get(`/api/trees/${tree._id}/cards`);
      expect(after.body.map((c: any) => c.content)).toEqual(["", "# One\n\nText.", "## Two\n\nMore."]);
    } finally {
      await server.stop();
    }
  });

  it("imports an OPML file and exports OPML and a Gingko Writer file, leaves only with --leaves", async () => {
    const dataDir = await freshDataDir();
    await cli(dataDir, ["user", "add", "ada@example.com", "--password", "a long password"]);
    const server = await startTestServer({ dataDir });
    const ada = new Api(server.url, { email: "ada@example.com", password: "a long password" });
    const tree = (await ada.post("/api/trees", { name: "Outline" })).body;
    await server.stop();

    const file = path.join(dataDir, "plan.opml");
    await writeFile(file, '<?xml version="1.0"?>\n<opml version="2.0"><head><title>Plan</title></head><body>\n<outline text="Goals" _note="for the year"><outline text="Write"/><outline text="Ship"/></outline>\n</body></opml>');
    const imported = await cli(dataDir, ["import", file, "--tree", tree._id]);
    expect(imported.stdout).toMatch(/Imported 3 cards/);

    const opml = await cli(dataDir, ["export", tree._id, "--format", "opml", "-o", "-"]);
    expect(opml.stdout).toContain('<outline text="Goals" _note="for the year">');
    const leaves = path.join(dataDir, "leaves.gkw");
    expect((await cli(dataDir, ["export", tree._id, "--format", "gkw", "--leaves", "-o", leaves])).code).toBe(0);
    const gkw = await readFile(leaves, "utf8");
    expect(gkw.match(/<gingko-card id="[a-z0-9]{24}">\n\n([^<]*)\n\n<\/gingko-card>/g)?.map((card) => card.split("\n\n")[1])).toEqual(["", "Write", "Ship"]);

    await writeFile(file, '<?xml version="1.0"?><!DOCTYPE opml [<!ENTITY x SYSTEM "file:///etc/passwd">]><opml><body/></opml>');
    const refused = await cli(dataDir, ["import", file, "--tree", tree._id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/DOCTYPE/);
  });
});
