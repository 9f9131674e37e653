/**
 * `npm test` (issue 33): the whole suite on a fresh machine, with nothing to do first.
 *
 * 1. The programs outside npm that the suites drive (scripts/test-tools.mjs: Chromium,
 *    LibreOffice, poppler) are checked. Missing ones are installed with apt-get when this
 *    runs as root and apt-get is here, with one line saying so; otherwise the run stops
 *    before any test, naming the exact command. A group the command leaves out on purpose
 *    (`CARDTREE_TEST_SKIP_BROWSER=1`, `CARDTREE_TEST_SKIP_OFFICE=1`) is not installed, and
 *    its suites are skipped; CI (CI=true) may leave nothing out.
 * 2. vitest runs with every argument given after `npm test --` (files, `--project nedb`, ...),
 *    its usual output, and a JSON report.
 * 3. The last lines come from that report: how many tests were skipped and why, then
 *    `N passed, N failed, N skipped` alone on the last line (what CI reads). The exit status
 *    is vitest's.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { TOOL_GROUPS, installCommand, isLeftOut, missingFiles } from "./test-tools.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const env = process.env;

function say(line) {
  process.stdout.write(`${line}\n`);
}

function hasCommand(command) {
  return spawnSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" }).status === 0;
}

/** apt-get install, quietly; on failure the log is shown and the run stops. */
function aptInstall(packages) {
  const quiet = { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8", env: { ...env, DEBIAN_FRONTEND: "noninteractive" } };
  let result = spawnSync("apt-get", ["install", "-y", "-qq", ...packages], quiet);
  if (result.status !== 0) {
    // A fresh machine's package lists may be missing or old: update once, then try again.
    spawnSync("apt-get", ["update", "-qq"], quiet);
    result = spawnSync("apt-get", ["install", "-y", "-qq", ...packages], quiet);
  }
  if (result.status !== 0) {
    process.stderr.write(`${result.stdout ?? ""}${result.stderr ?? ""}`);
    say(`apt-get could not install ${packages.join(" ")}; the tests need them (or set the opt-out variables above).`);
    process.exit(1);
  }
}

function ensureTools() {
  const leftOut = TOOL_GROUPS.filter((group) => isLeftOut(group, env));
  if (env.CI === "true" && leftOut.length > 0) {
    say(`CI must run every test, but ${leftOut.map((group) => `${group.optOut}`).join(" and ")} is set.`);
    process.exit(1);
  }
  const needed = TOOL_GROUPS.filter((group) => !isLeftOut(group, env) && missingFiles(group).length > 0);
  if (needed.length === 0) return;
  const packages = needed.flatMap((group) => group.packages);
  const asRoot = process.getuid?.() === 0;
  if (asRoot && hasCommand("apt-get")) {
    say(`Installing what the tests drive outside npm: ${installCommand(packages, true)}`);
    aptInstall(packages);
    const still = needed.filter((group) => missingFiles(group).length > 0);
    if (still.length === 0) return;
    say(`Still missing after apt-get: ${still.flatMap((group) => missingFiles(group)).join(", ")}.`);
    process.exit(1);
  }
  say("The tests need programs that are not on this machine:");
  for (const group of needed) say(`- ${group.what}: ${missingFiles(group).join(", ")} not found`);
  say(`Install them with:\n  ${installCommand(packages, asRoot)}`);
  say(`or leave their tests out: ${needed.map((group) => `${group.optOut}=1`).join(" ")} npm test`);
  process.exit(1);
}

/** Which group's suites a test file declares, by the `describe` wrapper it calls. */
function groupOfFile(file, cache) {
  if (!cache.has(file)) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      // A file vitest reported but that is gone: no group.
    }
    cache.set(file, TOOL_GROUPS.find((group) => text.includes(`${group.marker}(`)) ?? null);
  }
  return cache.get(file);
}

/** The closing lines, from vitest's JSON report. */
function summarise(reportPath) {
  let report;
  try {
    report = JSON.parse(readFileSync(reportPath, "utf8"));
  } catch {
    say("vitest wrote no report: the run did not get as far as the tests.");
    say("0 passed, 1 failed, 0 skipped");
    return;
  }
  const reasons = new Map();
  const files = new Map();
  let skipped = 0;
  for (const file of report.testResults ?? []) {
    for (const test of file.assertionResults ?? []) {
      if (test.status !== "skipped" && test.status !== "pending" && test.status !== "todo") continue;
      skipped += 1;
      const group = groupOfFile(file.name, files);
      const reason =
        group && isLeftOut(group, env)
          ? `${group.optOut}=1 left out ${group.what.split(" (")[0]}`
          : test.status === "todo"
            ? "marked todo in the test code"
            : "skipped by the test code or not selected by the command's filters";
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    }
  }
  if (skipped > 0) {
    say(`Skipped ${skipped}: ${[...reasons].map(([reason, count]) => `${count} (${reason})`).join("; ")}.`);
  }
  // A file that failed to load has no tests to count; count it once so the run reads as failed.
  const failed = report.numFailedTests + (report.numFailedTestSuites > 0 && report.numFailedTests === 0 ? report.numFailedTestSuites : 0);
  say(`${report.numPassedTests} passed, ${failed} failed, ${skipped} skipped`);
}

ensureTools();

const reportPath = join(tmpdir(), `cardtree-vitest-${process.pid}.json`);
const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
if (!existsSync(vitest)) {
  say("vitest is not installed: run `npm install` first.");
  process.exit(1);
}
const args = ["run", "--reporter=default", "--reporter=json", `--outputFile.json=${reportPath}`, ...process.argv.slice(2)];
const result = spawnSync(process.execPath, [vitest, ...args], { cwd: root, stdio: "inherit", env });
summarise(reportPath);
rmSync(reportPath, { force: true });
if (result.signal) say(`vitest ended by ${result.signal} (${relative(root, vitest)})`);
process.exit(result.status ?? 1);
