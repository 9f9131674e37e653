/**
 * axe-core in the page under test: its source is read from node_modules (the pinned dev
 * dependency) and added as an inline script, nothing from the network. The page's CSP
 * forbids inline script, so contexts that run it are made with `bypassCSP`.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";

const source = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Serious and critical violations on the page (or inside `selector`), one line each. */
export async function seriousViolations(page: Page, selector?: string): Promise<string[]> {
  return (await findings(page, selector)).filter((v) => v.impact === "serious" || v.impact === "critical").map(line);
}

/** Every violation axe reports on the page (or inside `selector`), of any impact, one line each. */
export async function violations(page: Page, selector?: string): Promise<string[]> {
  return (await findings(page, selector)).map(line);
}

interface Finding {
  id: string;
  impact: string | null;
  nodes: string[];
}

const line = (v: Finding) => `${v.id} (${v.impact}): ${v.nodes.join(" | ")}`;

async function findings(page: Page, selector?: string): Promise<Finding[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.addScriptTag({ content: source });
  const violations = await page.evaluate(async (scope) => {
    const axe = (window as any).axe;
    const result = await axe.run(scope ? document.querySelector(scope) : document, { resultTypes: ["violations"] });
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      nodes: v.nodes.slice(0, 3).map((n: any) => `${n.target.join(" ")} ${n.failureSummary?.split("\n")[1] ?? ""}`),
    }));
  }, selector ?? null);
  return violations as Finding[];
}
