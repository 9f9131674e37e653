/**
 * `npm test` on a machine without the programs the suites drive (issue 33): it installs them
 * as root, and otherwise stops before any test with the exact command; an explicit opt-out
 * skips those suites and the last lines count them. The machine here has the programs, so a
 * "fresh" machine is played with CARDTREE_TEST_TOOLS_ROOT (where the runner looks for them)
 * and an unprivileged user (setpriv) for the not-root path.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { suiteDecision } from "../../scripts/test-tools.mjs";

const ROOT = path.resolve(import.meta.dirname, "../..");
const RUNNER = path.join(ROOT, "scripts", "test.mjs");
const NOWHERE = "/nonexistent-cardtree-tools";

function runner(args: string[], env: Record<string, string | undefined>, asNobody = false) {
  const base = { ...process.env, CI: undefined, CARDTREE_TEST_SKIP_BROWSER: undefined, CARDTREE_TEST_SKIP_OFFICE: undefined, CARDTREE_TEST_SKIP_PROXY: undefined, ...env };
  const command = asNobody ? "setpriv" : process.execPath;
  const argv = asNobody ? ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, RUNNER, ...args] : [RUNNER, ...args];
  const result = spawnSync(command, argv, { cwd: ROOT, env: base as NodeJS.ProcessEnv, encoding: "utf8", timeout: 120_000 });
  const lines = `${result.stdout}`.trim().split("\n");
  return { status: result.status, out: `${result.stdout}${result.stderr}`, last: lines[lines.length - 1] };
}

describe("suiteDecision", () => {
  const none = () => false;
  const all = () => true;

  it("runs a suite whose programs are here", () => {
    expect(suiteDecision("browser", {}, all)).toEqual({ action: "run" });
  });

  it("fails a suite whose programs are missing, naming the install command and the opt-out", () => {
    const decision = suiteDecision("office", {}, none);
    expect(decision.action).toBe("fail");
    const message = decision.action === "fail" ? decision.message : "";
    expect(message).toContain("apt-get install -y libreoffice-writer-nogui libreoffice-impress-nogui poppler-utils");
    expect(message).toContain("CARDTREE_TEST_SKIP_OFFICE=1");
  });

  it("skips a suite left out on purpose, but not in CI", () => {
    expect(suiteDecision("browser", { CARDTREE_TEST_SKIP_BROWSER: "1" }, none)).toEqual({ action: "skip" });
    expect(suiteDecision("browser", { CARDTREE_TEST_SKIP_BROWSER: "0" }, all)).toEqual({ action: "run" });
    expect(suiteDecision("browser", { CARDTREE_TEST_SKIP_BROWSER: "1", CI: "true" }, all).action).toBe("fail");
  });
});

describe("npm test on a machine without Chromium, LibreOffice, poppler and nginx", () => {
  it("stops before any test when it may not install them, naming the exact command", () => {
    const run = runner(["--project", "nedb", "test/readme/curl-examples.test.ts"], { CARDTREE_TEST_TOOLS_ROOT: NOWHERE }, true);
    expect(run.status).toBe(1);
    expect(run.out).toContain("sudo apt-get install -y chromium libreoffice-writer-nogui libreoffice-impress-nogui poppler-utils nginx openssl");
    expect(run.out).toContain("CARDTREE_TEST_SKIP_BROWSER=1 CARDTREE_TEST_SKIP_OFFICE=1 CARDTREE_TEST_SKIP_PROXY=1 npm test");
    // Nothing ran: no vitest output, no summary.
    expect(run.out).not.toMatch(/passed, \d+ failed/);
  });

  it("asks only for what is not left out", () => {
    const run = runner(["--project", "nedb", "test/readme/curl-examples.test.ts"], { CARDTREE_TEST_TOOLS_ROOT: NOWHERE, CARDTREE_TEST_SKIP_OFFICE: "1", CARDTREE_TEST_SKIP_PROXY: "1" }, true);
    expect(run.status).toBe(1);
    expect(run.out).toContain("sudo apt-get install -y chromium\n");
  });

  it("refuses an opt-out in CI", () => {
    const run = runner(["--project", "nedb", "test/readme/curl-examples.test.ts"], { CI: "true", CARDTREE_TEST_SKIP_BROWSER: "1" });
    expect(run.status).toBe(1);
    expect(run.out).toContain("CI must run every test");
  });

  it("with the opt-outs, skips those suites and its last lines say how many and why", () => {
    const run = runner(["--project", "nedb", "test/exports/html-reader.test.ts", "test/exports/docx-reader.test.ts"], {
      CARDTREE_TEST_TOOLS_ROOT: NOWHERE,
      CARDTREE_TEST_SKIP_BROWSER: "1",
      CARDTREE_TEST_SKIP_OFFICE: "1",
      CARDTREE_TEST_SKIP_PROXY: "1",
    });
    expect(run.status, run.out).toBe(0);
    const skipped = /^0 passed, 0 failed, (\d+) skipped$/.exec(run.last);
    expect(skipped, run.out).not.toBeNull();
    const lines = run.out.trim().split("\n");
    const reasons = lines[lines.length - 2];
    expect(reasons).toMatch(new RegExp(`^Skipped ${skipped![1]}: `));
    const browser = /(\d+) \(CARDTREE_TEST_SKIP_BROWSER=1 left out Chromium\)/.exec(reasons);
    const office = /(\d+) \(CARDTREE_TEST_SKIP_OFFICE=1 left out LibreOffice and poppler\)/.exec(reasons);
    expect(browser, reasons).not.toBeNull();
    expect(office, reasons).not.toBeNull();
    expect(Number(browser![1])).toBeGreaterThan(0);
    expect(Number(office![1])).toBeGreaterThan(0);
    expect(Number(browser![1]) + Number(office![1])).toBe(Number(skipped![1]));
  });
});
