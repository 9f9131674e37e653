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
  /** With motion allowed: from keydown to the first frame with the active card whole in view (issue 27). */
  reveal: { label: string; p50: number; p95: number; max: number }[];
  allRevealP95: number;
}

/**
 * The reveal series: each key alone (half a second after the last one's card came into view,
 * so the columns animate) and keys in a row (the next key as soon as the card is in view).
 */
const REVEAL_SERIES: { label: string; gapMs: number; series: KeySeries[] }[] = [
  { label: "one key at a time", gapMs: 500, series: SERIES.slice(0, 3) },
  { label: "keys in a row", gapMs: 0, series: SERIES },
];

/** Opens trees of these sizes in Chromium and adds their rows and targets to the report. */
export async function browserScenarios(options: { report: Report; baseUrl: string; sizes?: number[]; label?: string }): Promise<void> {
  const { report, baseUrl } = options;
  /** Rows and targets of an anchor's run say so (`--browser` runs this checkout and its anchor). */
  const side = options.label ? ` [${options.label}]` : "";
  if (!existsSync(CHROMIUM)) {
    report.note(`browser scenarios skipped: ${CHROMIUM} not found`);
    return;
  }
  const client = await CardtreeClient.signUp(baseUrl, `browser-${Date.now()}@bench.example`);
  for (const size of options.sizes ?? [5_000, 20_000]) {
    const treeId = await client.treeWith(`Browser ${size}`, generateTree(size, 11));
    const figures = await measureTree(baseUrl, client, treeId, size);
    report.add({ id: `browser-open-${size}${side}`, scenario: `browser: open a ${size}-card tree to interactive${side}`, ms: figures.openMs, note: `longest task ${figures.longestTaskMs.toFixed(0)} ms` });
    for (const key of figures.keys) {
      report.add({ id: `browser-keys-${size}-${key.label}${side}`, scenario: `browser: ${key.label}, ${size} cards${side}`, p50Ms: key.p50, note: `p95 ${key.p95.toFixed(1)} ms, max ${key.max.toFixed(1)} ms` });
    }
    for (const key of figures.reveal) {
      report.add({ id: `browser-reveal-${size}-${key.label}${side}`, scenario: `browser: active card whole in view, ${key.label}, ${size} cards${side}`, p50Ms: key.p50, note: `p95 ${key.p95.toFixed(1)} ms, max ${key.max.toFixed(1)} ms` });
    }
    report.target({ name: `browser: active card whole in view after a key, ${size.toLocaleString("en")} cards, p95${side}`, wanted: "≤ 50 ms", measured: `${figures.allRevealP95.toFixed(1)} ms`, met: figures.allRevealP95 <= 50 });
    if (size >= 100_000) {
      report.target({ name: `browser: open ${size.toLocaleString("en")} cards to interactive${side}`, wanted: "≤ 2 s", measured: `${figures.openMs.toFixed(0)} ms`, met: figures.openMs <= 2000 });
      report.target({ name: `browser: navigation keys, ${size.toLocaleString("en")} cards, p95${side}`, wanted: "≤ 50 ms", measured: `${figures.allKeysP95.toFixed(1)} ms`, met: figures.allKeysP95 <= 50 });
    }
    if (size === 5_000) {
      report.target({ name: `browser: navigation keys, 5,000 cards, p95${side}`, wanted: "≤ 50 ms", measured: `${figures.allKeysP95.toFixed(1)} ms`, met: figures.allKeysP95 <= 50 });
      report.target({ name: `browser: open 5,000 cards to interactive${side}`, wanted: "≤ 1 s", measured: `${figures.openMs.toFixed(0)} ms`, met: figures.openMs <= 1000 });
    }
    report.target({ name: `browser: longest task opening ${size} cards${side}`, wanted: "≤ 100 ms (no freeze)", measured: `${figures.longestTaskMs.toFixed(0)} ms`, met: figures.longestTaskMs <= 100 });
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
    // The same walks with motion allowed: how long until the active card is whole in view.
    await page.emulateMedia({ reducedMotion: "no-preference" });
    const reveal: BrowserFigures["reveal"] = [];
    const allReveal: number[] = [];
    for (const { label, gapMs, series: list } of REVEAL_SERIES) {
      await page.keyboard.press("Home");
      await page.waitForTimeout(600);
      const times: number[] = [];
      for (const series of list) {
        for (const key of series.setup) await page.keyboard.press(key);
        for (const key of series.keys) {
          if (gapMs > 0) await page.waitForTimeout(gapMs);
          times.push(await timedReveal(page, key));
        }
      }
      allReveal.push(...times);
      reveal.push({ label, ...spread(times) });
    }
    return { cards, openMs, longestTaskMs, keys, allKeysP95: spread(all).p95, reveal, allRevealP95: spread(allReveal).p95 };
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

/**
 * Milliseconds from the key's keydown to the first animation frame in which the active card
 * is whole inside its column and the window (its top, when it is taller than the column).
 * Gives up, answering the time so far, after 3 s.
 */
async function timedReveal(page: Page, key: string): Promise<number> {
  await page.evaluate(`window.__revealTime = new Promise((resolve) => {
    document.addEventListener("keydown", (event) => {
      const t0 = event.timeStamp;
      const check = () => {
        const card = document.querySelector(".card.active");
        const column = card && card.closest(".column");
        const row = document.querySelector(".columns");
        if (card && column && row) {
          const r = card.getBoundingClientRect();
          const c = column.getBoundingClientRect();
          const w = row.getBoundingClientRect();
          const top = Math.max(c.top, w.top, 0) - 1;
          const bottom = Math.min(c.bottom, w.bottom, innerHeight) + 1;
          const vertical = r.top >= top && (r.bottom <= bottom || r.top <= top + 40);
          const horizontal = r.left >= Math.max(w.left, 0) - 1 && r.right <= Math.min(w.right, innerWidth) + 1;
          if (vertical && horizontal) return resolve(performance.now() - t0);
        }
        if (performance.now() - t0 > 3000) return resolve(performance.now() - t0);
        requestAnimationFrame(check);
      };
      requestAnimationFrame(check);
    }, { once: true, capture: true });
  }); undefined`);
  await page.keyboard.press(key);
  return page.evaluate<number>("window.__revealTime");
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
