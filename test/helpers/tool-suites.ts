/**
 * `describe` for suites that drive programs outside npm (issue 33): Chromium, LibreOffice
 * and poppler, nginx. They run when the programs are here, are skipped only when the command left
 * them out on purpose (`CARDTREE_TEST_SKIP_BROWSER=1`, `CARDTREE_TEST_SKIP_OFFICE=1`,
 * `CARDTREE_TEST_SKIP_PROXY=1`; never in CI), and otherwise fail at load with the command that installs what is missing.
 * `npm test` (scripts/test.mjs) installs the packages first when it runs as root.
 */
import { describe } from "vitest";
import { suiteDecision, type ToolGroup } from "../../scripts/test-tools.mjs";

interface Suite {
  (name: string, body: () => void): void;
  (name: string, options: { timeout?: number }, body: () => void): void;
}

/** Decided when a suite is declared, so a file that needs only Chromium never asks for LibreOffice. */
function describeWith(group: ToolGroup["name"]): Suite {
  return (name: string, optionsOrBody: { timeout?: number } | (() => void), body?: () => void) => {
    const decision = suiteDecision(group);
    if (decision.action === "fail") throw new Error(decision.message);
    const suite = decision.action === "run" ? describe : describe.skip;
    if (typeof optionsOrBody === "function") suite(name, optionsOrBody);
    else suite(name, optionsOrBody, body);
  };
}

/** Suites that open pages in Debian's Chromium. */
export const describeInBrowser = describeWith("browser");

/** Suites that open exports in LibreOffice and read the PDF with poppler. */
export const describeWithOffice = describeWith("office");

/** Suites that run Debian's nginx in front of the server. */
export const describeWithNginx = describeWith("proxy");
