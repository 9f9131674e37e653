/**
 * Each side its own types (issue 31): `npm run typecheck` (`tsc -b`) checks the server
 * (tsconfig.server.json) without the DOM, the browser client (tsconfig.web.json) without
 * Node's types, and the kernel (tsconfig.shared.json) with neither. Two checks that the
 * split bites:
 *
 * - a file using the other host's globals does not compile with a side's options, while one
 *   using its own host's does (the fixtures in test/lint/type-split/, which no project
 *   includes);
 * - no side's program loads the other host's declarations by another way (a package's
 *   `/// <reference>`): the files each real project reads are listed (`--listFilesOnly`,
 *   which parses but does not check) and searched for them.
 */
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const FIXTURES = path.join(ROOT, "test/lint/type-split");
// Inside the repository, so that `types: ["node"]` finds node_modules/@types from here.
const SCRATCH = path.join(ROOT, "node_modules/.cache/type-split");
const TSC = path.join(ROOT, "node_modules/typescript/bin/tsc");
const run = promisify(execFile);

type Side = "server" | "web" | "shared";

/** tsc's diagnostics for `files` compiled alone with `side`'s options; empty when it compiles. */
async function compile(side: Side, files: string[]): Promise<string> {
  const name = `${side}-${files.map((file) => path.basename(file, ".ts")).join("-")}`;
  const config = path.join(SCRATCH, `${name}.json`);
  await mkdir(SCRATCH, { recursive: true });
  await writeFile(
    config,
    JSON.stringify({
      extends: path.join(ROOT, `tsconfig.${side}.json`),
      // The side's lib and types as they are; only what a one-off check needs differs.
      compilerOptions: { composite: false, incremental: false, noEmit: true, emitDeclarationOnly: false },
      files: files.map((file) => path.resolve(FIXTURES, file)),
      include: [],
      references: [],
    }),
  );
  const result = await run(process.execPath, [TSC, "-p", config, "--pretty", "false"], { cwd: ROOT }).catch(
    (err: { stdout?: string; code?: number }) => ({ stdout: err.stdout ?? `tsc failed (${err.code})` }),
  );
  return result.stdout.trim();
}

/** The files `tsc` reads for the real project of `side`. */
async function programFiles(side: Side): Promise<string[]> {
  const { stdout } = await run(process.execPath, [TSC, "-p", `tsconfig.${side}.json`, "--listFilesOnly"], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  return stdout.split("\n").filter(Boolean);
}

const DOM = /\/typescript\/lib\/lib\.(dom|webworker)[.a-z]*\.d\.ts$/;
const NODE = /\/node_modules\/@types\/node\//;

/** The diagnostics `output` gives for `file`, one line each. */
function about(output: string, file: string): string[] {
  return output.split("\n").filter((line) => line.includes(`${file}(`));
}

// Generous: tsc starts cold, and this machine's two cores are shared.
describe("each side compiles with its own host's types only", { timeout: 300_000 }, () => {
  it("the server knows Node's globals and not the DOM's", async () => {
    const output = await compile("server", ["server-node.ts", "server-dom.ts"]);
    expect(about(output, "server-node.ts")).toEqual([]);
    expect(about(output, "server-dom.ts").join("\n")).toContain("Cannot find name 'document'");
  });

  it("the client knows the DOM's globals and not Node's", async () => {
    const output = await compile("web", ["web-dom.ts", "web-node.ts"]);
    expect(about(output, "web-dom.ts")).toEqual([]);
    expect(about(output, "web-node.ts").join("\n")).toContain("Cannot find name 'process'");
  });

  it("the kernel knows neither, only what src/shared/host.d.ts declares of both", async () => {
    const output = await compile("shared", ["shared-host.ts", "shared-dom.ts", "shared-node.ts", path.join(ROOT, "src/shared/host.d.ts")]);
    expect(about(output, "shared-host.ts")).toEqual([]);
    expect(about(output, "shared-dom.ts").join("\n")).toContain("Cannot find name 'document'");
    expect(about(output, "shared-node.ts").join("\n")).toContain("Cannot find name 'Buffer'");
  });

  it("no real project loads the other host's declarations through a package", async () => {
    const [server, web, shared] = await Promise.all([programFiles("server"), programFiles("web"), programFiles("shared")]);
    // Each list is the whole program: the project's sources and every declaration they reach.
    expect(server.some((file) => file.endsWith("/src/main.ts"))).toBe(true);
    expect(web.some((file) => file.endsWith("/src/web/main.ts"))).toBe(true);
    expect(shared.some((file) => file.endsWith("/src/shared/records.ts"))).toBe(true);
    expect(server.filter((file) => DOM.test(file))).toEqual([]);
    expect(web.filter((file) => NODE.test(file))).toEqual([]);
    expect(shared.filter((file) => DOM.test(file) || NODE.test(file))).toEqual([]);
    // And the sides are what they claim: the server does read Node's types, the client the DOM's.
    expect(server.some((file) => NODE.test(file))).toBe(true);
    expect(web.some((file) => DOM.test(file))).toBe(true);
  });
});
