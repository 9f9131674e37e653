/**
 * The README's curl examples, run as written: every ```sh block that calls curl, in order, in
 * one bash session, against a server on a free port with a fresh data directory. Only the
 * address changes (localhost:3000 becomes the test server's). Each command is a step; a
 * step that prints something must print what the README promises, and a new example
 * without a check here fails until one is written.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api } from "../helpers/api.js";
import { runSteps, shellCommands } from "../helpers/doc-commands.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

type Check = (output: string, dir: string) => Promise<void> | void;

const json = (output: string) => JSON.parse(output);

/** What each printing step must print, by a pattern its command matches. */
const CHECKS: [RegExp, Check][] = [
  [/-D - .*Idempotency-Key: drafts-1/, (out) => expect(out).toMatch(/^idempotent-replayed: true$/i)],
  [/Idempotency-Key: drafts-1/, (out) => expect(json(out)).toMatchObject({ _id: "drafts000000000000000001", name: "Drafts" })],
  [/api\/signup/, (out) => expect(json(out)).toMatchObject({ email: "ada@example.com", limit: -1, treesCount: 0 })],
  [/^curl -s -u "\$A" localhost:3000\/api\/trees$/, (out) => expect(json(out).map((t: { name: string }) => t.name)).toEqual(["Novel"])],
  [/^curl -s -u "\$A" localhost:3000\/api\/trees\/\$TREE\/cards$/, (out) => expect(json(out).map((c: { content: string }) => c.content)).toEqual(["# Part one", "## Chapter 1"])],
  [/-X PUT -d '\{"content"/, (out) => expect(json(out)).toMatchObject({ content: "A better scene" })],
  [/-X DELETE/, (out) => expect(json(out).deleted).toHaveLength(1)],
  [/cards\/seed/, (out) => expect(json(out).map((c: { content: string }) => c.content)).toEqual(["# Notes\n\nSome text"])],
  [/collaborators/, (out) => expect(json(out)).toMatchObject({ email: "bob@example.com", owner: false })],
  [/"publicUrl":"ada-novel"/, (out) => expect(json(out)).toMatchObject({ name: "Novel", publicUrl: "ada-novel" })],
  [/api\/public\/ada-novel/, (out) => expect(json(out).cards.map((c: { content: string }) => c.content)).toContain("# Notes\n\nSome text")],
  [/-OJ .*export/, async (out, dir) => {
    expect(out).toBe("");
    expect((await readFile(path.join(dir, "Novel.docx"))).subarray(0, 2).toString()).toBe("PK");
  }],
  [/clonePublic/, (out) => expect(json(out)).toMatchObject({ name: "Novel (copy)" })],
  [/\/graphql/, (out) =>
    expect(json(out)).toEqual({
      data: { tree: { name: "Novel", roots: [{ content: "# Part one", depth: 1, children: [{ content: "## Chapter 1", children: [] }, { content: "# Notes\n\nSome text", children: [] }] }] } },
    })],
];

let server: TestServer;
let dir: string;
beforeAll(async () => {
  server = await startTestServer();
  dir = await mkdtemp(path.join(os.tmpdir(), "cardtree-readme-"));
});
afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("README's curl examples", () => {
  it("run as written against a fresh server, each printing what it should", async () => {
    const readme = await readFile(path.join(ROOT, "README.md"), "utf8");
    const address = new URL(server.url).host;
    const written = shellCommands(readme, (block) => /\bcurl\b/.test(block));
    const commands = written.map((command) => command.replaceAll("localhost:3000", address));
    expect(commands.length).toBeGreaterThan(10);
    // The README says bob and carol "must have signed up": they have.
    for (const [email, password] of [["bob@example.com", "bobs password"], ["carol@example.com", "another password"]]) {
      expect((await new Api(server.url).post("/api/signup", { email, password })).status).toBe(201);
    }

    const outputs = await runSteps(commands, { cwd: dir });
    expect(outputs).toHaveLength(commands.length);

    for (const [i, command] of commands.entries()) {
      const output = outputs[i].trim();
      const check = CHECKS.find(([pattern]) => pattern.test(written[i]))?.[1];
      if (!check) {
        expect(output, `README step without a check prints something: ${command}`).toBe("");
        continue;
      }
      try {
        await check(output, dir);
      } catch (err) {
        throw new Error(`README step:\n${command}\nprinted:\n${output.slice(0, 1000)}\n${(err as Error).message}`, { cause: err });
      }
    }
  });
});
