/**
 * Where opening a big tree's page goes (issue 27): opens a generated tree in Debian's Chromium
 * with a Chrome trace running and splits the page's main thread into fetching, script (by
 * file and function of the CPU profile), style, layout, paint and GC, with the longest tasks;
 * then times navigation keys with the same split. CPU-bound figures (task durations), so that
 * a loaded machine bends them less than wall time.
 *
 * `npx tsx bench/trace-open.ts [cards] [dataDir]` against a server it starts from dist/
 * (npm run build first). The data directory is kept so the tree is generated once:
 * a second run on the same directory reuses it (a restart's cold read, unless TRACE_WARM=1).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { chromium, type CDPSession, type Page } from "playwright-core";
import { CardtreeClient } from "./cardtree-client.js";
import { generateTree } from "./generate.js";
import { pinSelfToLoadCore, pinToServerCore } from "./processes.js";
import { startTestServer } from "../test/helpers/server.js";
import type { ProfileNode, TraceEvent } from "./trace-types.js";

const cards = Number(process.argv[2] ?? 100_000);
const dataDir = process.argv[3] ?? `/tmp/bigtree-trace-${cards}`;
const keysOnly = process.env.TRACE_KEYS !== "0";

// TRACE_SERVER=<path of another checkout's dist/server.mjs> traces that build instead (A/B).
const server = await startTestServer({
  dataDir,
  startTimeoutMs: 180_000,
  env: { LOG: "off" },
  args: process.env.TRACE_SERVER ? ["--enable-source-maps", process.env.TRACE_SERVER] : undefined,
});
// TRACE_PIN=1: as the bench runs it, the server on core 0, this tool and so Chromium on core 1.
if (process.env.TRACE_PIN === "1" && !(pinSelfToLoadCore() && pinToServerCore(server.process.pid!))) throw new Error("taskset could not pin the processes");
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const stateFile = path.join(dataDir, "trace-tree.json");
  let state: { email: string; password: string; treeId: string };
  if (existsSync(stateFile)) state = JSON.parse(readFileSync(stateFile, "utf8"));
  else {
    const client = await CardtreeClient.signUp(server.url, `trace-${Date.now()}@bench.example`);
    const treeId = await client.treeWith(`Trace ${cards}`, generateTree(cards, 11));
    state = { email: client.email, password: client.password, treeId };
    writeFileSync(stateFile, JSON.stringify(state));
  }
  const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1440, height: 900 }, reducedMotion: "reduce" });
  const login = await context.request.post("/api/login", { data: { email: state.email, password: state.password } });
  if (login.status() !== 200) throw new Error(`log-in failed: ${login.status()}`);
  // TRACE_WARM=1: the card list read once first, so the server holds its body and gzip copy as
  // after an import (what `npm run bench -- --browser` times), not a restart's cold read.
  if (process.env.TRACE_WARM === "1") {
    const warm = await context.request.get(`/api/trees/${state.treeId}/cards`, { headers: { "Accept-Encoding": "gzip, deflate, br" }, timeout: 180_000 });
    if (warm.status() !== 200) throw new Error(`warming the card list failed: ${warm.status()}`);
  }
  // TRACE_BULK=1: a bulk write first (1,000 cards imported into the tree, then 6 s for the
  // server to prepare the list), so the open is the first read after it, as the bench's is.
  if (process.env.TRACE_BULK === "1") {
    await new CardtreeClient(server.url, state.email, state.password).importSeed(state.treeId, JSON.stringify(generateTree(1000, Date.now() % 1000)));
    await new Promise((resolve) => setTimeout(resolve, 6000));
  }
  const page = await context.newPage();
  // A TimeStamp trace event when the tree page answers the keyboard (the bench's "interactive").
  // The long tasks as the bench's observer sees them (bench/scenarios/browser.ts: its target is the longest).
  await page.addInitScript(`(() => {
    const look = () => {
      if (location.pathname.startsWith("/trees/") && window.app && window.app.get("cardId") !== null && document.activeElement && document.activeElement.classList.contains("card")) {
        console.timeStamp("interactive");
        window.__interactiveAt = performance.now();
      } else setTimeout(look, 10);
    };
    look();
    window.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) window.__longTasks.push([Math.round(entry.startTime), Math.round(entry.duration)]);
    }).observe({ type: "longtask", buffered: true });
  })()`);
  await page.goto("/");
  await page.waitForFunction(() => !document.getElementById("root")?.classList.contains("boot"));
  const cdp = await context.newCDPSession(page);
  // TRACE_MBPS=100: the page's downloads at that many megabits a second (a writer's network,
  // where the wire, not this machine's load, sets how long the card list takes to arrive).
  if (process.env.TRACE_MBPS) {
    await cdp.send("Network.enable");
    await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: (Number(process.env.TRACE_MBPS) * 1e6) / 8, uploadThroughput: -1 });
  }
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
  const events = await traced(cdp, async () => {
    await cdp.send("Profiler.start");
    const started = Date.now();
    const serverCpu = serverTicks();
    const browserCpu = browserThreadTicks();
    await page.goto(`/trees/${state.treeId}`);
    await page.waitForFunction(() => (window as any).app.get("cardId") !== null && document.activeElement?.classList.contains("card"), undefined, { timeout: 120_000, polling: 10 });
    console.log(`open to interactive: ${Date.now() - started} ms (wall)`);
    // The server's CPU (all its threads: zlib's copies run in the thread pool) over the open and the settle after it.
    const during = serverTicks() - serverCpu;
    // Chromium's CPU by thread over the open (the network service's inflating, the renderer's
    // threads, the GPU process): which stage of the download pipeline the two cores went to. A
    // thread that ended meanwhile is not in it (the cards' worker: its CPU is in the trace).
    const browserAfter = browserThreadTicks();
    const byThread = [...browserAfter].map(([name, ms]) => [name, ms - (browserCpu.get(name) ?? 0)] as const).filter(([, ms]) => ms >= 20);
    console.log(`Chromium CPU by thread during the open: ${byThread.sort((a, b) => b[1] - a[1]).map(([name, ms]) => `${name} ${ms}`).join(", ")} ms`);
    const settle = Number(process.env.TRACE_SETTLE_MS ?? 1500);
    await page.waitForTimeout(settle);
    console.log(`server CPU: ${during} ms during the open, ${serverTicks() - serverCpu - during} ms in the ${settle} ms after`);
    const { longTasks, interactiveAt } = await page.evaluate(() => ({ longTasks: (window as any).__longTasks as [number, number][], interactiveAt: (window as any).__interactiveAt as number }));
    console.log(`long tasks (start ms from navigation: ms), interactive at ${interactiveAt.toFixed(0)} ms: ${longTasks.map(([at, ms]) => `${at}: ${ms}`).join(", ")}`);
    // TRACE_SETTLE_MS=500 (above): the keys start as soon after the open as the bench's do.
  });
  const { profile } = await cdp.send("Profiler.stop");
  summarize("open", events, profile);
  // TRACE_DUMP=<file>: the open's CPU profile and trace events kept, to read further.
  if (process.env.TRACE_DUMP) writeFileSync(process.env.TRACE_DUMP, JSON.stringify({ profile, events }));
  console.log(`DOM elements: ${await page.evaluate(() => document.getElementsByTagName("*").length)}, cards in DOM: ${await page.evaluate(() => document.querySelectorAll(".card").length)}`);
  if (keysOnly) {
    await cdp.send("Profiler.start");
    const times: { key: string; ms: number; at: number }[] = [];
    const keyEvents = await traced(cdp, async () => {
      for (const key of ["Home", ...Array(20).fill("ArrowDown"), ...Array(20).fill("ArrowUp"), "ArrowRight", "ArrowRight", ...Array(10).fill("ArrowDown"), "PageDown", "PageDown", "End", "Home"]) {
        times.push({ key, ms: await timedKey(page, key), at: await page.evaluate<number>("performance.now()") });
      }
      // TRACE_REVEAL=1: then as the bench's last series, with motion allowed and half a second between keys.
      if (process.env.TRACE_REVEAL === "1") {
        await page.emulateMedia({ reducedMotion: "no-preference" });
        await page.keyboard.press("Home");
        await page.waitForTimeout(600);
        for (const key of [...Array(25).fill("ArrowDown"), ...Array(25).fill("ArrowUp"), "ArrowDown", "ArrowRight", "ArrowRight", "ArrowRight", "ArrowRight"]) {
          await page.waitForTimeout(500);
          times.push({ key: `${key} (motion)`, ms: await timedKey(page, key), at: await page.evaluate<number>("performance.now()") });
        }
      }
    });
    const sorted = [...times].sort((a, b) => b.ms - a.ms);
    console.log(`\nkeys: ${times.length}, slowest ${sorted.slice(0, 10).map((t) => `${t.key} ${t.ms.toFixed(0)} ms`).join(", ")}`);
    const { profile: keyProfile } = await cdp.send("Profiler.stop");
    summarize("keys", keyEvents, keyProfile);
  }
  // The page's JavaScript heap after a full collection (what a 100,000-card tree holds); last,
  // since the collection would spare the keys the one they would have met.
  await cdp.send("HeapProfiler.collectGarbage");
  const heap = await cdp.send("Runtime.getHeapUsage");
  console.log(`JS heap after a full GC: ${(heap.usedSize / 1e6).toFixed(0)} MB used of ${(heap.totalSize / 1e6).toFixed(0)} MB`);
} finally {
  await browser.close();
  await server.stop();
}

/** The server process's CPU so far, in milliseconds (Linux's /proc; 0 elsewhere). */
function serverTicks(): number {
  try {
    const fields = readFileSync(`/proc/${server.process.pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/**
 * CPU so far of every thread of the Chromium processes this tool started (descendants of this
 * process other than the server), in milliseconds, summed by process and thread name.
 */
function browserThreadTicks(): Map<string, number> {
  const parents = new Map<number, number>();
  const commands = new Map<number, string>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(") ") + 2).split(" ")[1]));
      commands.set(Number(entry), readFileSync(`/proc/${entry}/cmdline`, "utf8"));
    } catch {
      // The process ended meanwhile.
    }
  }
  const ours = (pid: number): boolean => {
    for (let at = parents.get(pid); at !== undefined && at > 1; at = parents.get(at)) if (at === process.pid) return true;
    return false;
  };
  const ticks = new Map<string, number>();
  for (const [pid, command] of commands) {
    if (!command.includes("chromium") || pid === server.process.pid || !ours(pid)) continue;
    const kind = /--type=([a-z-]+)/.exec(command)?.[1] ?? "browser";
    let threads: string[];
    try {
      threads = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of threads) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
        const key = `${kind}/${name}`;
        ticks.set(key, (ticks.get(key) ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10);
      } catch {
        // The thread ended meanwhile.
      }
    }
  }
  return ticks;
}

async function traced(cdp: CDPSession, run: () => Promise<void>): Promise<TraceEvent[]> {
  const events: TraceEvent[] = [];
  cdp.on("Tracing.dataCollected", (message) => events.push(...(message.value as unknown as TraceEvent[])));
  await cdp.send("Tracing.start", {
    transferMode: "ReportEvents",
    traceConfig: { includedCategories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "blink", "toplevel", "netlog", "loading"] },
  });
  await run();
  const done = new Promise<void>((resolve) => cdp.once("Tracing.tracingComplete", () => resolve()));
  await cdp.send("Tracing.end");
  await done;
  return events;
}

async function timedKey(page: Page, key: string): Promise<number> {
  await page.evaluate(`window.__keyTime = new Promise((resolve) => {
    document.addEventListener("keydown", (event) => {
      const t0 = event.timeStamp;
      requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
    }, { once: true, capture: true });
  }); undefined`);
  await page.keyboard.press(key);
  return page.evaluate<number>("window.__keyTime");
}

function summarize(label: string, events: TraceEvent[], profile: { nodes: ProfileNode[]; startTime: number; samples?: number[]; timeDeltas?: number[] }): void {
  // The renderer's main thread and the cards worker.
  const threads = new Map<string, string>();
  for (const e of events) if (e.name === "thread_name") threads.set(`${e.pid}:${e.tid}`, String(e.args?.name));
  const main = [...threads].filter(([, name]) => name === "CrRendererMain").map(([key]) => key);
  const workers = [...threads].filter(([, name]) => name === "DedicatedWorker thread").map(([key]) => key);
  const on = (keys: string[]) => events.filter((e) => keys.includes(`${e.pid}:${e.tid}`) && e.ph === "X");
  // The page's renderer: the main thread with the most tasks.
  const tasks = on(main).filter((e) => e.name === "RunTask" || e.name === "ThreadControllerImpl::RunTask");
  const byPid = new Map<string, number>();
  for (const t of tasks) byPid.set(`${t.pid}:${t.tid}`, (byPid.get(`${t.pid}:${t.tid}`) ?? 0) + (t.dur ?? 0));
  const pageThread = [...byPid].sort((a, b) => b[1] - a[1])[0]?.[0];
  const mainEvents = on(pageThread ? [pageThread] : []);
  // Top-level tasks only (RunTask and ThreadControllerImpl::RunTask nest).
  const mainTasks: TraceEvent[] = [];
  for (const t of mainEvents.filter((e) => e.name === "RunTask" || e.name === "ThreadControllerImpl::RunTask").sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0))) {
    const last = mainTasks[mainTasks.length - 1];
    if (last && t.ts < last.ts + (last.dur ?? 0)) continue;
    mainTasks.push(t);
  }
  const total = mainTasks.reduce((s, t) => s + (t.dur ?? 0), 0) / 1000;
  const long = mainTasks.map((t) => (t.dur ?? 0) / 1000).sort((a, b) => b - a);
  const cpuLong = mainTasks.map((t) => (t.tdur ?? 0) / 1000).sort((a, b) => b - a);
  console.log(`\n== ${label}: main thread CPU ${cpuLong.reduce((a, b) => a + b, 0).toFixed(0)} ms in all`);
  console.log(`\n== ${label}: main thread busy ${total.toFixed(0)} ms in ${mainTasks.length} tasks; longest ${long.slice(0, 8).map((n) => n.toFixed(0)).join(", ")} ms; by CPU time ${cpuLong.slice(0, 8).map((n) => n.toFixed(0)).join(", ")} ms`);
  const names = ["FunctionCall", "EvaluateScript", "v8.compile", "TimerFire", "FireAnimationFrame", "EventDispatch", "UpdateLayoutTree", "Layout", "Paint", "PrePaint", "Layerize", "ParseHTML", "MajorGC", "MinorGC", "V8.GC_SCAVENGER", "ScheduleStyleRecalculation", "HitTest", "IntersectionObserverController::computeIntersections", "UpdateLayer", "ParseAuthorStyleSheet"];
  const sums = new Map<string, { ms: number; n: number; max: number }>();
  for (const e of mainEvents) {
    if (!names.includes(e.name)) continue;
    const s = sums.get(e.name) ?? { ms: 0, n: 0, max: 0 };
    s.ms += (e.tdur ?? e.dur ?? 0) / 1000;
    s.n++;
    s.max = Math.max(s.max, (e.dur ?? 0) / 1000);
    sums.set(e.name, s);
  }
  for (const [name, s] of [...sums].sort((a, b) => b[1].ms - a[1].ms)) console.log(`  ${name.padEnd(28)} ${s.ms.toFixed(0).padStart(6)} ms  n=${s.n}  max ${s.max.toFixed(1)} ms`);
  const workerTasks = on(workers);
  const workerCpu = new Map<string, number>();
  for (const e of workerTasks) if (["FunctionCall", "EvaluateScript", "MinorGC", "MajorGC", "ResourceReceivedData", "V8.GC_SCAVENGER"].includes(e.name)) workerCpu.set(e.name, (workerCpu.get(e.name) ?? 0) + (e.tdur ?? e.dur ?? 0) / 1000);
  console.log(`  worker: ${[...workerCpu].map(([n, ms]) => `${n} ${ms.toFixed(0)} ms`).join(", ")}`);
  const workerBusy = workerTasks.filter((e) => e.name === "ThreadControllerImpl::RunTask").reduce((s, t) => s + (t.tdur ?? t.dur ?? 0), 0) / 1000;
  console.log(`  worker busy ${workerBusy.toFixed(0)} ms CPU`);
  // Network: each request's send, first byte of its answer, and last byte (TRACE_REQUESTS=1: all of them).
  const t0ms = (ts: number) => ((ts - (mainTasks[0]?.ts ?? 0)) / 1000).toFixed(0);
  const urls = new Map<string, string>();
  for (const e of events) {
    const data = e.args?.data as { requestId?: string; url?: string } | undefined;
    if (e.name === "ResourceSendRequest" && data?.requestId) urls.set(data.requestId, String(data.url).replace(/^https?:\/\/[^/]+/, ""));
    if (process.env.TRACE_REQUESTS === "1" && data?.requestId && ["ResourceReceiveResponse", "ResourceFinish"].includes(e.name)) console.log(`  ${e.name === "ResourceFinish" ? "last byte " : "first byte"} ${urls.get(data.requestId) ?? data.requestId} at ${t0ms(e.ts)} ms`);
  }
  for (const e of events) {
    if (e.name === "ResourceSendRequest" && (String(e.args?.data?.url).includes("/api/") || process.env.TRACE_REQUESTS === "1")) console.log(`  request ${String(e.args?.data?.url)} at ${((e.ts - mainTasks[0].ts) / 1000).toFixed(0)} ms`);
    if (e.name === "ResourceFinish") {
      const d = e.args?.data as { encodedDataLength?: number; decodedBodyLength?: number } | undefined;
      if ((d?.decodedBodyLength ?? 0) > 1_000_000) console.log(`  big response finished at ${((e.ts - mainTasks[0].ts) / 1000).toFixed(0)} ms: ${d?.encodedDataLength} bytes on the wire, ${d?.decodedBodyLength} decoded`);
    }
  }
  // CPU (thread) time per phase: until the cards' request, until its answer, until interactive.
  const stamp = (name: string) => events.find((e) => e.name === "TimeStamp" && (e.args?.data as { message?: string } | undefined)?.message === name)?.ts;
  const request = events.find((e) => e.name === "ResourceSendRequest" && String(e.args?.data?.url).endsWith("/cards"))?.ts;
  const finish = events.find((e) => e.name === "ResourceFinish" && Number((e.args?.data as { decodedBodyLength?: number } | undefined)?.decodedBodyLength) > 1_000_000)?.ts;
  const interactive = stamp("interactive");
  const start = mainTasks[0]?.ts ?? 0;
  const cpu = (list: TraceEvent[], from: number, to: number) => list.filter((t) => t.ts >= from && t.ts < to).reduce((s, t) => s + (t.tdur ?? t.dur ?? 0), 0) / 1000;
  const workerTop = workerTasks.filter((e) => e.name === "ThreadControllerImpl::RunTask");
  const phases: [string, number | undefined, number | undefined][] =
    label === "keys"
      ? [["all keys", -Infinity, Infinity]]
      : [
          ["start → cards request", start, request],
          ["request → answer whole", request, finish],
          ["answer → interactive", finish, interactive],
          ["interactive → end", interactive, Infinity],
        ];
  for (const [name, from, to] of phases) {
    if (from === undefined || to === undefined || from === -Infinity) continue;
    const end = to === Infinity ? (mainTasks[mainTasks.length - 1]?.ts ?? 0) : to;
    console.log(`  phase ${name.padEnd(24)} wall ${((end - from) / 1000).toFixed(0).padStart(6)} ms, main CPU ${cpu(mainTasks, from, to).toFixed(0).padStart(6)} ms, worker CPU ${cpu(workerTop, from, to).toFixed(0).padStart(6)} ms`);
  }
  // Timeline of long tasks (≥ 30 ms) relative to the first task.
  const t0 = mainTasks[0]?.ts ?? 0;
  for (const t of mainTasks.filter((t) => (t.tdur ?? 0) >= 30_000)) {
    const inner = mainEvents.filter((e) => e.ts >= t.ts && e.ts + (e.dur ?? 0) <= t.ts + (t.dur ?? 0) && names.includes(e.name) && (e.dur ?? 0) >= 5_000);
    console.log(`  task at ${((t.ts - t0) / 1000).toFixed(0)} ms: ${((t.dur ?? 0) / 1000).toFixed(0)} ms wall, ${((t.tdur ?? 0) / 1000).toFixed(0)} ms CPU [${inner.map((e) => `${e.name} ${((e.dur ?? 0) / 1000).toFixed(0)}`).join(", ")}]`);
  }
  // Self time by function in the CPU profile (main thread JS only).
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) self.set(samples[i], (self.get(samples[i]) ?? 0) + (deltas[i] ?? 0) / 1000);
  const byFunction = new Map<string, number>();
  for (const [id, ms] of self) {
    const node = byId.get(id)!;
    const file = node.callFrame.url.split("/").pop() ?? "";
    const key = `${node.callFrame.functionName || "(anon)"} ${file}:${node.callFrame.lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + ms);
  }
  // Inclusive time by function per phase (samples are in the trace's clock).
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const name = (id: number) => {
    const node = byId.get(id)!;
    return `${node.callFrame.functionName || "(anon)"} ${node.callFrame.url.split("/").pop() ?? ""}:${node.callFrame.lineNumber + 1}`;
  };
  for (const [phase, from, to] of phases) {
    if (from === undefined || to === undefined) continue;
    const inclusive = new Map<string, number>();
    let at = profile.startTime;
    for (let i = 0; i < samples.length; i++) {
      at += deltas[i] ?? 0;
      if (at < from || at >= to) continue;
      const seen = new Set<string>();
      for (let id: number | undefined = samples[i]; id !== undefined; id = parentOf.get(id)) {
        const key = name(id);
        if (seen.has(key) || key.startsWith("(root)")) continue;
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + (deltas[i] ?? 0) / 1000);
      }
    }
    console.log(`  inclusive, ${phase}:`);
    for (const [key, ms] of [...inclusive].filter(([k]) => !k.startsWith("(idle)")).sort((a, b) => b[1] - a[1]).slice(0, label === "keys" ? 60 : 30)) console.log(`    ${ms.toFixed(0).padStart(6)} ms  ${key}`);
  }
  console.log("  JS self time (profile):");
  for (const [key, ms] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`    ${ms.toFixed(0).padStart(6)} ms  ${key}`);
}
