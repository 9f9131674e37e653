/**
 * The browser client on big trees (issue 16), in Debian's Chromium driven by playwright-core:
 * how long a 5,000- and a 20,000-card tree take to open until the first card answers the
 * keyboard, the longest task that blocked the page meanwhile, and how long each navigation
 * key takes from keydown to the next painted frame (median, p95 and worst of a series).
 *
 * The key series walk a generated outline the way a writer does: down and up the first
 * column (the case that re-lit the whole subtree of the active card on every key), into a
 * deep column and along it, and by the page and column ends.
 *
 * `npx tsx bench/scenarios/browser.ts` runs these alone against a server it starts from the
 * sources (the bench runs them against its compiled server).
 */
import { existsSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { chromium, type Page } from "playwright-core";
import { CardtreeClient } from "../cardtree-client.js";
import { generateTree } from "../generate.js";
import { spread, type Report } from "../report.js";

const CHROMIUM = "/usr/bin/chromium";

interface KeySeries {
  label: string;
  /** Keys pressed before measuring (not timed), to get to the series' starting card. */
  setup: string[];
  keys: string[];
}

const SERIES: KeySeries[] = [
  { label: "Down in column 1", setup: ["Home"], keys: Array(25).fill("ArrowDown") },
  { label: "Up in column 1", setup: [], keys: Array(25).fill("ArrowUp") },
  { label: "Right into the subtree", setup: ["ArrowDown"], keys: ["ArrowRight", "ArrowRight", "ArrowRight", "ArrowRight"] },
  { label: "Down in a deep column", setup: [], keys: Array(25).fill("ArrowDown") },
  { label: "Left back to column 1", setup: [], keys: ["ArrowLeft", "ArrowLeft", "ArrowLeft", "ArrowLeft"] },
  { label: "PageDown / PageUp", setup: ["ArrowRight"], keys: [...Array(8).fill("PageDown"), ...Array(8).fill("PageUp")] },
  { label: "End / Home", setup: [], keys: ["End", "Home", "End", "Home", "End", "Home"] },
];

export interface BrowserFigures {
  cards: number;
  openMs: number;
  longestTaskMs: number;
  keys: { label: string; p50: number; p95: number; max: number }[];
  allKeysP95: number;
}

/** Opens trees of these sizes in Chromium and adds their rows and targets to the report. */
export async function browserScenarios(options: { report: Report; baseUrl: string; sizes?: number[] }): Promise<void> {
  const { report, baseUrl } = options;
  if (!existsSync(CHROMIUM)) {
    report.note(`browser scenarios skipped: ${CHROMIUM} not found`);
    return;
  }
  const client = await CardtreeClient.signUp(baseUrl, `browser-${Date.now()}@bench.example`);
  for (const size of options.sizes ?? [5_000, 20_000]) {
    const treeId = await client.treeWith(`Browser ${size}`, generateTree(size, 11));
    const figures = await measureTree(baseUrl, client, treeId, size);
    report.add({ id: `browser-open-${size}`, scenario: `browser: open a ${size}-card tree to interactive`, ms: figures.openMs, note: `longest task ${figures.longestTaskMs.toFixed(0)} ms` });
    for (const key of figures.keys) {
      report.add({ id: `browser-keys-${size}-${key.label}`, scenario: `browser: ${key.label}, ${size} cards`, p50Ms: key.p50, note: `p95 ${key.p95.toFixed(1)} ms, max ${key.max.toFixed(1)} ms` });
    }
    if (size === 5_000) {
      report.target({ name: "browser: navigation keys, 5,000 cards, p95", wanted: "≤ 50 ms", measured: `${figures.allKeysP95.toFixed(1)} ms`, met: figures.allKeysP95 <= 50 });
      report.target({ name: "browser: open 5,000 cards to interactive", wanted: "≤ 1 s", measured: `${figures.openMs.toFixed(0)} ms`, met: figures.openMs <= 1000 });
    }
    report.target({ name: `browser: longest task opening ${size} cards`, wanted: "≤ 100 ms (no freeze)", measured: `${figures.longestTaskMs.toFixed(0)} ms`, met: figures.longestTaskMs <= 100 });
  }
}

async function measureTree(baseUrl: string, client: CardtreeClient, treeId: string, cards: number): Promise<BrowserFigures> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  try {
    const context = await browser.newContext({ baseURL: baseUrl, viewport: { width: 1440, height: 900 }, reducedMotion: "reduce" });
    const login = await context.request.post("/api/login", { data: { email: client.email, password: client.password } });
    if (login.status() !== 200) throw new Error(`log-in failed: ${login.status()}`);
    const page = await context.newPage();
    await page.addInitScript(`window.__longest = 0;
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) window.__longest = Math.max(window.__longest, entry.duration);
      }).observe({ type: "longtask", buffered: true });`);
    // Warm the HTTP cache and the bundle's compilation once, as a returning writer has it.
    await page.goto("/");
    await page.waitForFunction(() => !document.getElementById("root")?.classList.contains("boot"));
    const started = Date.now();
    await page.goto(`/trees/${treeId}`);
    await page.waitForFunction(() => (window as any).app.get("cardId") !== null && document.activeElement?.classList.contains("card"), undefined, { timeout: 60_000, polling: 10 });
    const openMs = Date.now() - started;
    // Let the page settle (deferred rendering runs in idle slices) before timing keys.
    await page.waitForTimeout(500);
    const longestTaskMs = await page.evaluate(() => (window as any).__longest as number);
    const keys: BrowserFigures["keys"] = [];
    const all: number[] = [];
    for (const series of SERIES) {
      for (const key of series.setup) await page.keyboard.press(key);
      const times: number[] = [];
      for (const key of series.keys) times.push(await timedKey(page, key));
      all.push(...times);
      keys.push({ label: series.label, ...spread(times) });
    }
    return { cards, openMs, longestTaskMs, keys, allKeysP95: spread(all).p95 };
  } finally {
    await browser.close();
  }
}

/** Milliseconds from the key's keydown to the frame after it was handled (two rAFs). */
async function timedKey(page: Page, key: string): Promise<number> {
  // The listener is in place before the key is sent: input reaches the page on its own channel.
  // Strings, not functions: tsx would name inner arrows with a helper the page lacks.
  await page.evaluate(`window.__keyTime = new Promise((resolve) => {
    document.addEventListener("keydown", (event) => {
      const t0 = event.timeStamp;
      requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
    }, { once: true, capture: true });
  }); undefined`);
  await page.keyboard.press(key);
  return page.evaluate<number>("window.__keyTime");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { startTestServer } = await import("../../test/helpers/server.js");
  const { Report } = await import("../report.js");
  const server = await startTestServer({ startTimeoutMs: 120_000 });
  try {
    const report = new Report({ standalone: true });
    const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
    await browserScenarios({ report, baseUrl: server.url, sizes: sizes.length > 0 ? sizes : undefined });
    report.print();
  } finally {
    await server.stop();
  }
}
