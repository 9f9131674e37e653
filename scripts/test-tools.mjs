/**
 * The programs outside npm that the test suite drives (issues 33 and 27), in one list: the test
 * runner (scripts/test.mjs) installs them, and the suites that use them
 * (test/browser/harness.ts, test/exports/reader-tools.ts, test/exports/html-reader.test.ts)
 * refuse to run without them unless the writer of the command left them out on purpose.
 *
 * Each group names the files it needs, the Debian packages that bring them, and the
 * variable that leaves its suites out (`CARDTREE_TEST_SKIP_BROWSER=1`). A group left out is
 * reported at the end of the run with the number of tests it skipped; CI may not leave
 * any out.
 */
import { existsSync } from "node:fs";

/** @type {readonly import("./test-tools.d.mts").ToolGroup[]} */
export const TOOL_GROUPS = [
  {
    name: "browser",
    what: "Chromium (the browser tests, and the html export opened as a reader would)",
    files: ["/usr/bin/chromium"],
    packages: ["chromium"],
    optOut: "CARDTREE_TEST_SKIP_BROWSER",
    marker: "describeInBrowser",
  },
  {
    name: "office",
    what: "LibreOffice and poppler (the docx and pptx exports opened as a reader would)",
    files: ["/usr/bin/soffice", "/usr/bin/pdfinfo", "/usr/bin/pdftotext"],
    packages: ["libreoffice-writer-nogui", "libreoffice-impress-nogui", "poppler-utils"],
    optOut: "CARDTREE_TEST_SKIP_OFFICE",
    marker: "describeWithOffice",
  },
  {
    name: "proxy",
    what: "nginx and openssl (docs/self-hosting.md's reverse proxy, run in front of three processes)",
    files: ["/usr/sbin/nginx", "/usr/bin/openssl"],
    packages: ["nginx", "openssl"],
    optOut: "CARDTREE_TEST_SKIP_PROXY",
    marker: "describeWithNginx",
  },
];

/** True when the writer of the command set the group's variable to leave its suites out. */
export function isLeftOut(group, env = process.env) {
  const value = env[group.optOut];
  return value !== undefined && value !== "" && value !== "0" && value !== "false";
}

/**
 * The group's files that are not on this machine. `CARDTREE_TEST_TOOLS_ROOT` looks for them
 * under another folder instead of `/`: the runner's own test uses it to play a machine
 * without them.
 */
export function missingFiles(group, exists = existsSync, env = process.env) {
  const base = env.CARDTREE_TEST_TOOLS_ROOT ?? "";
  return group.files.filter((file) => !exists(`${base}${file}`));
}

/**
 * What a suite of the group does at load time: run (`"run"`), be skipped because the
 * command left it out (`"skip"`), or fail at once with a message that says what to do.
 * CI may not leave a group out: a run there that would skip tests fails instead.
 */
export function suiteDecision(groupName, env = process.env, exists = existsSync) {
  const group = TOOL_GROUPS.find((candidate) => candidate.name === groupName);
  if (!group) throw new Error(`unknown tool group: ${groupName}`);
  if (isLeftOut(group, env)) {
    if (env.CI === "true") {
      return { action: "fail", message: `${group.optOut} is set, but CI must run every test (${group.what}).` };
    }
    return { action: "skip" };
  }
  const missing = missingFiles(group, exists, env);
  if (missing.length === 0) return { action: "run" };
  return {
    action: "fail",
    message:
      `These tests need ${group.what}: ${missing.join(", ")} not found. ` +
      `Run \`npm test\` as root to have it install them, or \`${installCommand(group.packages, false)}\`; ` +
      `or set ${group.optOut}=1 to leave these tests out.`,
  };
}

/** The command a person types to install the packages. */
export function installCommand(packages, asRoot) {
  return `${asRoot ? "" : "sudo "}apt-get install -y ${packages.join(" ")}`;
}
