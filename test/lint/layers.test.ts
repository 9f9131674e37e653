/**
 * `npm run lint` refuses an upward import and an import cycle: the dependency rules
 * (.dependency-cruiser.cjs) run over a fixture tree that breaks each, and over src/,
 * which must break none.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

async function cruise(target: string): Promise<Violation[]> {
  const depcruise = path.join(ROOT, "node_modules", ".bin", "depcruise");
  const result = await run(depcruise, [target, "--config", ".dependency-cruiser.cjs", "--output-type", "json"], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? "" }));
  return (JSON.parse(result.stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

it("refuses a domain module importing a transport, and a cycle", { timeout: 60_000 }, async () => {
  const violations = await cruise("test/lint/fixture/src");
  const seen = violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
  expect(seen).toContain("domain-inward: test/lint/fixture/src/domain/upward.ts -> test/lint/fixture/src/rest/routes.ts");
  expect(seen.some((line) => line.startsWith("no-cycles: test/lint/fixture/src/domain/first.ts"))).toBe(true);
});

it("finds no violation in src/", { timeout: 60_000 }, async () => {
  expect(await cruise("src")).toEqual([]);
});

it("refuses a private module of NeDB (issue 31: the embedded store on NeDB's public API)", { timeout: 180_000 }, async () => {
  const violations = await cruise("test/lint/fixture/src");
  const seen = violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
  expect(seen).toContain("nedb-public-api-only: test/lint/fixture/src/store/private-nedb.ts -> node_modules/@seald-io/nedb/lib/model.js");
});

it("refuses NeDB's private fields in src/ (ESLint), and src/ reaches none", { timeout: 180_000 }, async () => {
  const eslint = path.join(ROOT, "node_modules", ".bin", "eslint");
  const lint = (code: string, file: string) =>
    new Promise<{ status: number; stdout: string }>((resolve) => {
      const child = execFile(eslint, ["--stdin", "--stdin-filename", file, "--format", "json"], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }, (err, stdout) =>
        resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout }),
      );
      child.stdin!.end(code);
    });
  const messages = async (code: string, file: string) =>
    ((JSON.parse((await lint(code, file)).stdout) as { messages: { ruleId: string; message: string }[] }[])[0]?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
  const reach = 'export const f = (db: { __original: { executor: unknown } }) => db.__original.executor;\n';
  expect(await messages(reach, "src/store/reach.ts")).toContain("no-restricted-syntax: NeDB's internals: use its public API (issue 31, src/store/embedded-collections.ts).");
  // The same outside src/ (a test may look inside to prove a point) is not refused.
  expect((await messages(reach, "test/store/reach.ts")).filter((m) => m.startsWith("no-restricted-syntax"))).toEqual([]);
});
