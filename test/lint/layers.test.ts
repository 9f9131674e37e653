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
