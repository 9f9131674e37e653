/**
 * A tree page opened over a phone's network (issue 27, the tree page's LCP on a phone),
 * side by side with another build: `npx tsx bench/phone-open.ts [cards] [runs]` (defaults
 * 300 and 6) against this checkout's dist/ (npm run build first) and BENCH_BASELINE's
 * (default main), built in a temporary directory.
 *
 * Each side is a compiled server with a generated tree of `cards` cards. Each run opens the
 * tree's page in a new Chromium context, logged in, with the network as Lighthouse's mobile
 * preset has it (150 ms round trips, 1.6 Mbit/s down, 750 kbit/s up) and the CPU as it is,
 * the sides alternating. Printed: when the first card was in the page and the page's largest
 * contentful paint, from the page's own clock, median and every run, and the order the
 * page's requests went out and came back in the first run of each side. What a change of
 * round trips does shows here whatever the machine's load, which moves Lighthouse's score
 * (its simulated CPU) by more than the change itself.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { CardtreeClient } from "./cardtree-client.js";
import { generateTree } from "./generate.js";
import { freePort, ROOT } from "./processes.js";
import { median } from "./report.js";
import { buildBaseline } from "./scenarios/lighthouse.js";

const cards = Number(process.argv[2] ?? 300);
const runs = Number(process.argv[3] ?? 6);
const revision = process.env.BENCH_BASELINE ?? "main";
const NETWORK = { offline: false, latency: 150, downloadThroughput: (1.6e6 / 8) * 0.9, uploadThroughput: (750e3 / 8) * 0.9 };

interface Side {
  id: string;
  url: string;
  email: string;
  password: string;
  treeId: string;
  process: ChildProcess;
}

const workDir = mkdtempSync(path.join(tmpdir(), "cardtree-phone-open-"));
const sides: Side[] = [];
try {
  console.log(`Building ${revision} for comparison...`);
  const baseline = buildBaseline(workDir, revision, "baseline");
  for (const [id, cwd] of [
    ["before", baseline],
    ["now", ROOT],
  ] as const) {
    const port = await freePort();
    const child = spawn(process.execPath, ["dist/server.mjs"], {
      cwd,
      env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: mkdtempSync(path.join(workDir, `${id}-`)), LOG: "off" },
      stdio: "ignore",
    });
    const url = `http://127.0.0.1:${port}`;
    for (let tries = 0; ; tries++) {
      try {
        if ((await fetch(`${url}/healthz`)).ok) break;
      } catch {
        if (tries > 600) throw new Error(`the ${id} server did not start`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const client = await CardtreeClient.signUp(url, `phone-${id}@bench.example`);
    const treeId = await client.treeWith("Phone", generateTree(cards, 7));
    sides.push({ id, url, email: client.email, password: client.password, treeId, process: child });
  }
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const figures = new Map(sides.map((side) => [side.id, { card: [] as number[], lcp: [] as number[] }]));
  for (let run = 0; run < runs; run++) {
    for (const side of run % 2 === 0 ? sides : [...sides].reverse()) {
      const context = await browser.newContext({ baseURL: side.url, viewport: { width: 412, height: 823 } });
      const login = await context.request.post("/api/login", { data: { email: side.email, password: side.password } });
      if (login.status() !== 200) throw new Error(`log-in failed on ${side.id}: ${login.status()}`);
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      await cdp.send("Network.enable");
      await cdp.send("Network.emulateNetworkConditions", NETWORK);
      await page.addInitScript(() => {
        const seen = window as unknown as { firstCard: number; lcp: number };
        seen.firstCard = 0;
        seen.lcp = 0;
        new PerformanceObserver((list) => {
          for (const entry of list.getEntries()) seen.lcp = entry.startTime;
        }).observe({ type: "largest-contentful-paint", buffered: true });
        new MutationObserver((_, observer) => {
          if (!document.querySelector(".columns .card")) return;
          seen.firstCard = performance.now();
          observer.disconnect();
        }).observe(document, { childList: true, subtree: true });
      });
      const started = Date.now();
      const order: string[] = [];
      page.on("request", (request) => order.push(`${Date.now() - started} > ${new URL(request.url()).pathname}`));
      page.on("requestfinished", (request) => order.push(`${Date.now() - started} < ${new URL(request.url()).pathname}`));
      await page.goto(`/trees/${side.treeId}`);
      await page.locator(".columns .card").first().waitFor({ timeout: 60_000 });
      // The largest paint is final once the page has been still a while.
      await page.waitForTimeout(1_500);
      const seen = await page.evaluate(() => {
        const { firstCard, lcp } = window as unknown as { firstCard: number; lcp: number };
        return { firstCard, lcp };
      });
      figures.get(side.id)!.card.push(seen.firstCard);
      figures.get(side.id)!.lcp.push(seen.lcp);
      if (run < 2) console.log(`${side.id}, first run: ${order.join(" | ")}`);
      await context.close();
    }
  }
  await browser.close();
  for (const side of sides) {
    const { card, lcp } = figures.get(side.id)!;
    const list = (values: number[]) => values.map((v) => v.toFixed(0)).join(", ");
    console.log(`${side.id === "now" ? "this checkout" : `before (${revision})`}: first card ${median(card).toFixed(0)} ms (${list(card)}); LCP ${median(lcp).toFixed(0)} ms (${list(lcp)})`);
  }
} finally {
  for (const side of sides) side.process.kill();
  rmSync(workDir, { recursive: true, force: true });
}
