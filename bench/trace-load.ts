/**
 * The tree page's long tasks while it opens (issue 27's TBT), from a Chromium trace with the
 * CPU slowed 4x as Lighthouse's mobile preset slows it, side by side with an anchor:
 *
 *   TSX_DISABLE_CACHE=1 npx tsx bench/trace-load.ts [anchor-commit] [rounds] [cards]
 *
 * Each side is its own compiled server (this checkout's dist/, and the anchor built from
 * `git archive`, as `--lighthouse` builds it), with the same generated tree (bench/generate.ts,
 * seed 27). The rounds alternate the sides, one fresh browser profile a load (empty caches,
 * the session's cookie), so both sides see the same machine load. For each load it prints
 * every main-thread task over 50 ms from navigation until the page is complete (`app` knows
 * the active card: after `tree:load`) plus a second, what took the time inside it (trace
 * events' self time, and JavaScript by function from a sampling profile), and the sum of
 * (task - 50 ms) over those tasks: the essence of total blocking time, whatever window
 * Lighthouse then counts. Load averages are printed beside each round. `LIST_MS=20` lists the
 * tasks from 20 ms on too (to see a long task split into shorter ones).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type CDPSession } from "playwright-core";
import { CardtreeClient } from "./cardtree-client.js";
import { generateTree } from "./generate.js";
import { ROOT, startPinned, type Pinned } from "./processes.js";
import { buildBaseline } from "./scenarios/lighthouse.js";
import type { ProfileNode, TraceEvent } from "./trace-types.js";

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface Task {
  start: number;
  dur: number;
  /** CPU time of the main thread in the task, ms. */
  cpu: number;
  self: Map<string, number>;
  js: Map<string, number>;
}

/** The CPU slow-down while tracing (`THROTTLE`, default 4 as Lighthouse's mobile preset). */
const THROTTLE = Number(process.env.THROTTLE ?? 4);
/**
 * `SYNC_CALLS=1`: also times the page's calls that may wait for the browser process (the first
 * use of localStorage loads the whole area over a synchronous IPC, reading `document.cookie`
 * asks the browser too), and lists those of half a millisecond or more.
 */
const SYNC_CALLS = process.env.SYNC_CALLS === "1";

/** Runs in the page before its scripts (as a string: the bench's own code is not bundled for it). */
const timeSyncCalls = `(() => {
  const calls = (window.syncCalls = []);
  const wrap = (target, name, label) => {
    const original = target[name];
    target[name] = function (...args) {
      const start = performance.now();
      try { return original.apply(this, args); } finally { calls.push([label + " " + String(args[0]).slice(0, 30), start, performance.now() - start]); }
    };
  };
  for (const name of ["getItem", "setItem", "removeItem", "key"]) wrap(Storage.prototype, name, "localStorage." + name);
  const cookie = Object.getOwnPropertyDescriptor(Document.prototype, "cookie");
  Object.defineProperty(Document.prototype, "cookie", {
    configurable: true,
    get() { const start = performance.now(); try { return cookie.get.call(this); } finally { calls.push(["document.cookie (read)", start, performance.now() - start]); } },
    set(value) { cookie.set.call(this, value); },
  });
})();`;

/**
 * `TOP_LINES=1`: also lists the lines of the scripts' top-level code (the modules' own
 * statements, run when a chunk is evaluated, and anonymous callbacks) that the profile's
 * samples fell on, with the line's text. Meant for an unminified build, where each statement
 * has a line of its own (`node -e "import('./scripts/build-web.mjs').then((m) =>
 * m.buildWeb({ minify: false }))"`, then `npm run build` again): in a minified chunk they are
 * all on line 1. This is how the trees list's collator, made at the entry's top level, was
 * found (issue 27).
 */
const TOP_LINES = process.env.TOP_LINES === "1";

/** Samples on the built scripts' top-level and anonymous code, by line, with the line's text. */
function topLines(profile: Profile, webDir: string): [string, number][] {
  const hits = new Map<string, number>();
  const interval = profile.samples.length > 0 ? (profile.timeDeltas.reduce((sum, delta) => sum + delta, 0) / profile.samples.length) / 1000 : 0;
  for (const node of profile.nodes) {
    const name = short(node.callFrame.url);
    if (node.callFrame.functionName !== "" || !/^app-[A-Z0-9]+\.js$/.test(name)) continue;
    let lines: string[] = [];
    try {
      lines = readFileSync(path.join(webDir, name), "utf8").split("\n");
    } catch {
      // Another build's file: listed without its text.
    }
    for (const tick of node.positionTicks ?? []) {
      const key = `${name}:${tick.line} ${(lines[tick.line - 1] ?? "").trim().slice(0, 100)}`;
      hits.set(key, (hits.get(key) ?? 0) + tick.ticks * interval);
    }
  }
  return [...hits].sort((a, b) => b[1] - a[1]);
}

/** Tasks are listed from this length on (`LIST_MS`, default 50), by wall time or CPU time at 4x; the sums still count from 50 ms. */
const LIST_MS = Number(process.env.LIST_MS ?? 50);

const CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "toplevel", "blink.user_timing", "loading"].join(",");

function short(url: string): string {
  if (!url) return "";
  try {
    return new URL(url).pathname.replace(/^.*\//, "");
  } catch {
    return url.slice(-40);
  }
}

/** What an event is, for the breakdown: its name, with the script or event type when it says one. */
function label(event: TraceEvent): string {
  const data = event.args?.data ?? {};
  if (event.name === "EvaluateScript" || event.name === "v8.compileModule" || event.name === "v8.evaluateModule") return `${event.name} ${short(String(data.url ?? ""))}`;
  if (event.name === "EventDispatch") return `EventDispatch ${String(data.type ?? "")}`;
  if (event.name === "FunctionCall") return `FunctionCall ${short(String(data.url ?? ""))}`;
  return event.name;
}

/** Main-thread tasks of the page's renderer with each one's self time by event, nested events included. */
function tasksOf(events: TraceEvent[]): Task[] {
  const threadNames = events.filter((event) => event.name === "thread_name" && event.args?.name === "CrRendererMain");
  // The page's renderer is the one that ran the most script.
  let best: { pid: number; tid: number; total: number } | undefined;
  for (const thread of threadNames) {
    const total = events.filter((event) => event.pid === thread.pid && event.tid === thread.tid && event.ph === "X" && event.name === "RunTask").reduce((sum, event) => sum + (event.dur ?? 0), 0);
    if (!best || total > best.total) best = { pid: thread.pid, tid: thread.tid, total };
  }
  if (!best) return [];
  const mine = events.filter((event) => event.pid === best!.pid && event.tid === best!.tid && event.ph === "X" && event.dur !== undefined).sort((a, b) => a.ts - b.ts || b.dur! - a.dur!);
  const tasks: Task[] = [];
  let current: Task | undefined;
  // A stack of open events inside the current task, to give each its self time.
  let stack: { event: TraceEvent; children: number }[] = [];
  const close = (upTo: number) => {
    while (stack.length > 0 && stack[stack.length - 1].event.ts + stack[stack.length - 1].event.dur! <= upTo) {
      const { event, children } = stack.pop()!;
      const key = label(event);
      current!.self.set(key, (current!.self.get(key) ?? 0) + (event.dur! - children) / 1000);
      if (stack.length > 0) stack[stack.length - 1].children += event.dur!;
    }
  };
  for (const event of mine) {
    if (event.name === "RunTask" && (!current || event.ts >= current.start + current.dur * 1000)) {
      if (current) close(Number.POSITIVE_INFINITY);
      current = { start: event.ts, dur: event.dur! / 1000, cpu: (event.tdur ?? event.dur!) / 1000, self: new Map(), js: new Map() };
      tasks.push(current);
      stack = [{ event, children: 0 }];
      continue;
    }
    if (!current || event.ts >= current.start + current.dur * 1000) continue;
    close(event.ts);
    stack.push({ event, children: 0 });
  }
  if (current) close(Number.POSITIVE_INFINITY);
  return tasks;
}

/** Puts each profile sample's function (and script) into the task it fell in. */
function attributeSamples(tasks: Task[], profile: Profile): void {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  let time = profile.startTime;
  const long = tasks.filter((task) => task.dur > 50 || atPhone(task) > 50);
  for (let i = 0; i < profile.samples.length; i++) {
    time += profile.timeDeltas[i];
    const task = long.find((candidate) => time >= candidate.start && time < candidate.start + candidate.dur * 1000);
    if (!task) continue;
    const frame = nodes.get(profile.samples[i])!.callFrame;
    const interval = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i]) / 1000;
    const key = `${frame.functionName || "(anonymous)"} ${short(frame.url)}${frame.url ? `:${frame.lineNumber + 1}` : ""}`;
    task.js.set(key, (task.js.get(key) ?? 0) + interval);
  }
}

/**
 * The task's length on Lighthouse's phone (the CPU 4x slower than this machine's when idle),
 * from the main thread's CPU time in it, which other processes on the machine do not stretch
 * as they stretch its wall time. Chromium's throttling counts in the thread's CPU time, so
 * with THROTTLE=4 the CPU time is already the phone's, with THROTTLE=1 it is multiplied by 4.
 */
function atPhone(task: Task): number {
  return (task.cpu * 4) / THROTTLE;
}

function top(map: Map<string, number>, count: number): string {
  return [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .filter(([, ms]) => ms >= 2)
    .map(([name, ms]) => `${name} ${ms.toFixed(0)}`)
    .join(", ");
}

async function traceOnce(url: string, baseUrl: string, cookie: string, verbose: boolean, webDir: string): Promise<{ blocking: number; blockingCpu: number; long: number; total: number; elements: number; tasks: Task[] }> {
  const profileDir = mkdtempSync(path.join(os.tmpdir(), "cardtree-trace-"));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 412, height: 823 },
    deviceScaleFactor: 1.75,
    isMobile: true,
    hasTouch: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  try {
    await context.addCookies(
      cookie.split("; ").map((pair) => {
        const at = pair.indexOf("=");
        return { name: pair.slice(0, at), value: pair.slice(at + 1), url: baseUrl };
      }),
    );
    const page = context.pages()[0] ?? (await context.newPage());
    if (SYNC_CALLS) await page.addInitScript(timeSyncCalls);
    const cdp: CDPSession = await context.newCDPSession(page);
    await cdp.send("Emulation.setCPUThrottlingRate", { rate: THROTTLE });
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
    const events: TraceEvent[] = [];
    cdp.on("Tracing.dataCollected", (message) => {
      events.push(...(message.value as unknown as TraceEvent[]));
    });
    const done = new Promise<void>((resolve) => cdp.once("Tracing.tracingComplete", () => resolve()));
    await cdp.send("Tracing.start", { categories: CATEGORIES, transferMode: "ReportEvents" });
    await cdp.send("Profiler.start");
    await page.goto(url, { waitUntil: "commit" });
    await page.waitForFunction(() => (window as any).app?.get?.("cardId") != null, undefined, { timeout: 120_000, polling: 50 });
    await page.waitForTimeout(1000);
    const { profile } = (await cdp.send("Profiler.stop")) as { profile: Profile };
    await cdp.send("Tracing.end");
    await done;
    const elements = await page.evaluate(() => document.getElementsByTagName("*").length);
    if (SYNC_CALLS && verbose) {
      const calls = await page.evaluate(() => (window as unknown as { syncCalls: [string, number, number][] }).syncCalls);
      for (const [name, at, ms] of calls.filter((call) => call[2] >= 0.5)) console.log(`    ${at.toFixed(0).padStart(6)} ms  ${name} took ${ms.toFixed(1)} ms (wall, unthrottled)`);
    }
    const tasks = tasksOf(events);
    attributeSamples(tasks, profile);
    if (TOP_LINES && verbose) {
      for (const [line, ms] of topLines(profile, webDir).slice(0, 15)) console.log(`    top-level ${ms.toFixed(1).padStart(6)} ms  ${line}`);
    }
    // A task is listed when it is long as traced, or when its CPU time at a phone's speed
    // (4x, as Lighthouse counts it) would be.
    const long = tasks.filter((task) => task.dur > 50 || atPhone(task) > 50);
    const first = tasks[0]?.start ?? 0;
    if (verbose) {
      for (const task of tasks.filter((each) => each.dur > LIST_MS || atPhone(each) > LIST_MS)) {
        console.log(`    ${((task.start - first) / 1000).toFixed(0).padStart(6)} ms  task ${task.dur.toFixed(0)} ms (at 4x from CPU ${(atPhone(task)).toFixed(0)}): ${top(task.self, 6)}`);
        console.log(`             js: ${top(task.js, 6)}`);
      }
    }
    return {
      blocking: long.reduce((sum, task) => sum + Math.max(0, task.dur - 50), 0),
      blockingCpu: long.reduce((sum, task) => sum + Math.max(0, atPhone(task) - 50), 0),
      long: long.filter((task) => task.dur > 50).length,
      total: tasks.reduce((sum, task) => sum + task.dur, 0),
      elements,
      tasks,
    };
  } finally {
    await context.close();
    rmSync(profileDir, { recursive: true, force: true, maxRetries: 5 });
  }
}

async function sessionCookie(baseUrl: string, client: CardtreeClient): Promise<string> {
  const response = await fetch(`${baseUrl}/api/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email: client.email, password: client.password }),
  });
  if (response.status !== 200) throw new Error(`log-in failed: ${response.status}`);
  return response.headers
    .getSetCookie()
    .map((value) => value.split(";")[0])
    .join("; ");
}

async function main(): Promise<void> {
  const [anchor, roundsText, cardsText] = process.argv.slice(2);
  const rounds = Number(roundsText ?? 3);
  const cards = Number(cardsText ?? 300);
  const workDir = mkdtempSync(path.join(os.tmpdir(), "cardtree-trace-load-"));
  const sides = [{ id: "now", cwd: ROOT }];
  if (anchor && anchor !== "-") {
    console.log(`Building the anchor ${anchor}...`);
    sides.unshift({ id: `before (${anchor})`, cwd: buildBaseline(workDir, anchor, "trace-baseline") });
  }
  const servers: { id: string; server: Pinned; url: string; cookie: string; webDir: string }[] = [];
  try {
    for (const side of sides) {
      const dataDir = path.join(workDir, `data-${servers.length}`);
      mkdirSync(dataDir);
      const server = await startPinned({
        command: () => [process.execPath, "dist/server.mjs"],
        cwd: side.cwd,
        env: { DATA_DIR: dataDir, LOG: "off" },
        logFile: path.join(workDir, `server-${servers.length}.log`),
        readyPath: "/healthz",
        timeoutMs: 180_000,
      });
      const client = await CardtreeClient.signUp(server.url, `trace-${servers.length}@bench.example`);
      const treeId = await client.treeWith(`Trace ${cards}`, generateTree(cards, 27));
      servers.push({ id: side.id, server, url: `${server.url}/trees/${treeId}`, cookie: await sessionCookie(server.url, client), webDir: path.join(side.cwd, "dist", "web") });
    }
    const summary = new Map<string, string[]>();
    for (let round = 0; round < rounds; round++) {
      for (const side of servers) {
        const load = readFileSync("/proc/loadavg", "utf8").split(" ")[0];
        console.log(`  ${side.id}, round ${round + 1} (load ${load}):`);
        const result = await traceOnce(side.url, side.server.url, side.cookie, true, side.webDir);
        const line = `sum(task-50) ${result.blocking.toFixed(0)} ms over ${result.long} tasks > 50 ms; from CPU time at 4x: ${result.blockingCpu.toFixed(0)} ms; all tasks ${result.total.toFixed(0)} ms; ${result.elements} elements; load ${load}`;
        console.log(`    => ${line}`);
        summary.set(side.id, [...(summary.get(side.id) ?? []), line]);
      }
    }
    console.log("\nSummary (CPU 4x slower, as Lighthouse's mobile preset):");
    for (const [id, lines] of summary) for (const line of lines) console.log(`  ${id}: ${line}`);
  } finally {
    for (const { server } of servers) await server.stop();
    rmSync(workDir, { recursive: true, force: true, maxRetries: 5 });
  }
}

await main();
