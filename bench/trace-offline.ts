/**
 * Where opening a tree offline goes (issue 26's "a 5,000-card tree opens offline within 1 s";
 * bench/scenarios/offline.ts times it): the same steps as the bench (a persistent profile
 * opens the tree online, so the service worker and the tree's copy in IndexedDB are there;
 * the network is cut; the page reloaded), with what each reload spent where:
 * - the navigation's own timing (the service worker's start and answer, the old page's
 *   unload, the document), and each file of the app with its worker time;
 * - the page's milestones, stamped by an init script: the device database opened, the copy
 *   read from it, the first failed request, the first card in the page, interactive;
 * - Chromium's CPU over each reload (every process of it, from /proc: the old page's going,
 *   the new one's work, the service worker, IndexedDB in the browser process);
 * - with TRACE=1, the last reload traced: the page's main-thread tasks from the reload to
 *   interactive (wall, CPU, the JavaScript functions in each), CPU by kind of work, and the
 *   other threads (the service worker's, the cards' worker).
 *
 * `npx tsx bench/trace-offline.ts [cards] [reloads]` against a server it starts from dist/
 * (npm run build first); TRACE_SERVER=<another checkout's dist/server.mjs> measures that
 * build instead (side by side: run both, alternated). TRACE_PIN=1 runs as the bench does: the
 * server on core 0, this tool and so Chromium on core 1.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type CDPSession } from "playwright-core";
import { CardtreeClient } from "./cardtree-client.js";
import { generateTree } from "./generate.js";
import { pinSelfToLoadCore, pinToServerCore } from "./processes.js";
import { startTestServer } from "../test/helpers/server.js";
import type { ProfileNode, TraceEvent } from "./trace-types.js";

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

const cards = Number(process.argv[2] ?? 5_000);
const reloads = Number(process.argv[3] ?? 5);
const tracing = process.env.TRACE === "1";

/**
 * Stamps in the page, each with `performance.now()` and a trace time stamp of the same name:
 * the prototypes wrapped are the browser's (the app's code is not touched).
 */
const STAMPS = `(() => {
  const marks = (window.__marks = []);
  const stamp = (name) => {
    marks.push([name, performance.now()]);
    console.timeStamp("offline:" + name);
  };
  stamp("document" + (navigator.onLine ? "" : " (offline)"));
  const open = IDBFactory.prototype.open;
  IDBFactory.prototype.open = function (...args) {
    stamp("idb open asked");
    const request = open.apply(this, args);
    request.addEventListener("success", () => stamp("idb open done"), { once: true });
    return request;
  };
  const get = IDBObjectStore.prototype.get;
  IDBObjectStore.prototype.get = function (...args) {
    const name = this.name;
    stamp("idb get " + name + " asked");
    const request = get.apply(this, args);
    request.addEventListener("success", () => stamp("idb get " + name + " done"), { once: true });
    return request;
  };
  const getAll = IDBIndex.prototype.getAll;
  IDBIndex.prototype.getAll = function (...args) {
    stamp("idb outbox read asked");
    const request = getAll.apply(this, args);
    request.addEventListener("success", () => stamp("idb outbox read done"), { once: true });
    return request;
  };
  const fetchNow = window.fetch;
  let failed = false;
  window.fetch = function (...args) {
    const url = String(args[0] && args[0].url ? args[0].url : args[0]);
    if (!marks.some(([name]) => name.startsWith("first request "))) stamp("first request " + url.replace(location.origin, "") + (navigator.onLine ? "" : " (offline)"));
    const answer = fetchNow.apply(this, args);
    answer.catch(() => {
      if (!failed) stamp("first request failed");
      failed = true;
    });
    return answer;
  };
  const look = () => {
    if (!marks.some(([name]) => name === "first card") && document.querySelector(".columns .card")) stamp("first card");
    if (window.app && window.app.get("cardId") != null && document.querySelector(".columns .card")) stamp("interactive");
    else setTimeout(look, 5);
  };
  look();
  window.__longTasks = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__longTasks.push([Math.round(entry.startTime), Math.round(entry.duration)]);
  }).observe({ type: "longtask", buffered: true });
})()`;

const server = await startTestServer({
  env: { STORE: "nedb", LOG: "off" },
  args: ["--enable-source-maps", process.env.TRACE_SERVER ?? "dist/server.mjs"],
});
if (process.env.TRACE_PIN === "1" && !(pinSelfToLoadCore() && pinToServerCore(server.process.pid!))) throw new Error("taskset could not pin the processes");
const profileDir = mkdtempSync(path.join(os.tmpdir(), "cardtree-trace-offline-"));
const context = await chromium.launchPersistentContext(profileDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  baseURL: server.url,
  viewport: { width: 1440, height: 900 },
  reducedMotion: "reduce",
});
try {
  const writer = await CardtreeClient.signUp(server.url, `trace-offline-${Date.now()}@bench.example`);
  const treeId = await writer.treeWith("Offline trace", generateTree(cards, 26));
  const login = await context.request.post("/api/login", { data: { email: writer.email, password: writer.password } });
  if (login.status() !== 200) throw new Error(`log-in failed: ${login.status()}`);
  const page = context.pages()[0] ?? (await context.newPage());
  await page.addInitScript(STAMPS);
  await page.goto(`/trees/${treeId}`);
  await page.waitForFunction(() => (window as any).app?.get("cardId") != null, undefined, { timeout: 60_000 });
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null, undefined, { timeout: 60_000 });
  // As the bench: the copy is written after the open (and when the page goes).
  await page.waitForTimeout(2_000);
  await context.setOffline(true);
  const cdp = await context.newCDPSession(page);
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let i = 1; i <= reloads; i++) {
    const traceThis = tracing && i === reloads;
    if (traceThis) {
      await cdp.send("Profiler.enable");
      await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
      await cdp.send("Profiler.start");
    }
    let events: TraceEvent[] = [];
    let wall = 0;
    const run = async () => {
      const cpuBefore = chromiumCpuMs();
      const started = performance.now();
      await page.reload();
      await page.waitForFunction(() => (window as any).app?.get("cardId") != null && document.querySelectorAll(".columns .card").length > 0, undefined, { timeout: 60_000, polling: 10 });
      wall = performance.now() - started;
      cpus.push(chromiumCpuMs() - cpuBefore);
    };
    if (traceThis) events = await traced(cdp, run);
    else await run();
    walls.push(wall);
    const seen = await page.evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
      const files = (performance.getEntriesByType("resource") as PerformanceResourceTiming[]).map((r) => ({
        name: r.name.replace(/^https?:\/\/[^/]+/, ""),
        start: r.startTime,
        worker: r.workerStart,
        end: r.responseEnd,
      }));
      return {
        nav: {
          workerStart: nav.workerStart,
          fetchStart: nav.fetchStart,
          responseStart: nav.responseStart,
          responseEnd: nav.responseEnd,
          unloadEventStart: nav.unloadEventStart,
          unloadEventEnd: nav.unloadEventEnd,
          domInteractive: nav.domInteractive,
          domContentLoaded: nav.domContentLoadedEventEnd,
          load: nav.loadEventEnd,
        },
        files,
        marks: (window as any).__marks as [string, number][],
        longTasks: (window as any).__longTasks as [number, number][],
      };
    });
    const ms = (n: number) => n.toFixed(0);
    console.log(`\nreload ${i}: ${ms(wall)} ms (the bench's measure), Chromium CPU ${cpus[cpus.length - 1]} ms`);
    console.log(`  navigation: ${Object.entries(seen.nav).map(([k, v]) => `${k} ${ms(v)}`).join(", ")}`);
    console.log(`  files: ${seen.files.map((f) => `${f.name} ${ms(f.start)}→${ms(f.end)}${f.worker > 0 ? ` (worker ${ms(f.worker)})` : ""}`).join(", ")}`);
    console.log(`  marks: ${seen.marks.map(([name, at]) => `${name} ${ms(at)}`).join(", ")}`);
    console.log(`  long tasks (start: ms): ${seen.longTasks.map(([at, d]) => `${at}: ${d}`).join(", ") || "none"}`);
    if (traceThis) {
      const { profile } = await cdp.send("Profiler.stop");
      summarize(events, profile as Profile, seen.marks);
    }
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
  console.log(`\nreloads: ${walls.map((w) => w.toFixed(0)).join(", ")} ms; median ${median(walls).toFixed(0)} ms; Chromium CPU median ${median(cpus)} ms; load ${os.loadavg()[0].toFixed(2)}`);
} finally {
  await context.close();
  rmSync(profileDir, { recursive: true, force: true });
  await server.stop();
  rmSync(server.dataDir, { recursive: true, force: true });
}

/** CPU so far of every Chromium process this tool started (from /proc; 10 ms ticks), in ms. */
function chromiumCpuMs(): number {
  const parents = new Map<number, number>();
  const ticks = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      parents.set(Number(entry), Number(fields[1]));
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes("chromium")) ticks.set(Number(entry), Number(fields[11]) + Number(fields[12]));
    } catch {
      // Ended meanwhile.
    }
  }
  const ours = (pid: number): boolean => {
    for (let at = parents.get(pid); at !== undefined && at > 1; at = parents.get(at)) if (at === process.pid) return true;
    return false;
  };
  let sum = 0;
  for (const [pid, n] of ticks) if (ours(pid)) sum += n * 10;
  return sum;
}

async function traced(cdp: CDPSession, run: () => Promise<void>): Promise<TraceEvent[]> {
  const events: TraceEvent[] = [];
  const collect = (message: { value: unknown[] }) => events.push(...(message.value as TraceEvent[]));
  cdp.on("Tracing.dataCollected", collect);
  await cdp.send("Tracing.start", {
    transferMode: "ReportEvents",
    traceConfig: { includedCategories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "blink", "toplevel", "loading", "ServiceWorker", "IndexedDB"] },
  });
  await run();
  const done = new Promise<void>((resolve) => cdp.once("Tracing.tracingComplete", () => resolve()));
  await cdp.send("Tracing.end");
  await done;
  cdp.off("Tracing.dataCollected", collect);
  return events;
}

/** The reload's threads, from the trace, on the page's clock (ms after its navigation started). */
function summarize(events: TraceEvent[], profile: Profile, marks: [string, number][]): void {
  const anchor = events.find((e) => e.name === "TimeStamp" && (e.args?.data as { message?: string } | undefined)?.message?.startsWith("offline:document"));
  const documentAt = marks.find(([name]) => name.startsWith("document"))?.[1];
  if (!anchor || documentAt === undefined) {
    console.log("  (no anchor in the trace: not summarised)");
    return;
  }
  const pageMs = (ts: number) => (ts - anchor.ts) / 1000 + documentAt;
  const interactiveAt = marks.find(([name]) => name === "interactive")?.[1] ?? Infinity;
  const threads = new Map<string, string>();
  for (const e of events) if (e.name === "thread_name") threads.set(`${e.pid}:${e.tid}`, String(e.args?.name));
  const key = (e: TraceEvent) => `${e.pid}:${e.tid}`;
  const pageThread = key(anchor);
  const isTask = (e: TraceEvent) => e.ph === "X" && (e.name === "RunTask" || e.name === "ThreadControllerImpl::RunTask");
  const topLevel = (list: TraceEvent[]) => {
    const out: TraceEvent[] = [];
    for (const t of list.filter(isTask).sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0))) {
      const last = out[out.length - 1];
      if (last && t.ts < last.ts + (last.dur ?? 0)) continue;
      out.push(t);
    }
    return out;
  };
  const inOpen = (e: TraceEvent) => pageMs(e.ts) <= interactiveAt;
  const byThread = new Map<string, TraceEvent[]>();
  for (const e of events) if (e.ph === "X") byThread.set(key(e), [...(byThread.get(key(e)) ?? []), e]);
  // The JavaScript in each main-thread task: the profile's samples, by function (self time).
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const sampleTimes: { at: number; node: number; ms: number }[] = [];
  let at = profile.startTime;
  const deltas = profile.timeDeltas ?? [];
  (profile.samples ?? []).forEach((node, i) => {
    at += deltas[i] ?? 0;
    sampleTimes.push({ at, node, ms: (deltas[i + 1] ?? 0) / 1000 });
  });
  const functionsIn = (from: number, to: number) => {
    const sums = new Map<string, number>();
    for (const s of sampleTimes) {
      if (s.at < from || s.at >= to) continue;
      const frame = nodes.get(s.node)!.callFrame;
      if (["(idle)", "(program)", "(root)"].includes(frame.functionName)) continue;
      const name = `${frame.functionName || "(anon)"} ${frame.url.split("/").pop()}:${frame.lineNumber + 1}`;
      sums.set(name, (sums.get(name) ?? 0) + s.ms);
    }
    return [...sums].sort((a, b) => b[1] - a[1]);
  };
  const mainTasks = topLevel(byThread.get(pageThread) ?? []).filter(inOpen);
  const cpu = mainTasks.reduce((s, t) => s + (t.tdur ?? 0), 0) / 1000;
  console.log(`  main thread until interactive: ${mainTasks.length} tasks, ${(mainTasks.reduce((s, t) => s + (t.dur ?? 0), 0) / 1000).toFixed(0)} ms wall, ${cpu.toFixed(0)} ms CPU`);
  for (const t of mainTasks.filter((t) => (t.dur ?? 0) >= 3_000)) {
    const top = functionsIn(t.ts, t.ts + (t.dur ?? 0)).slice(0, 4);
    const inner = (byThread.get(pageThread) ?? []).filter((e) => e.ts >= t.ts && e.ts + (e.dur ?? 0) <= t.ts + (t.dur ?? 0) && !isTask(e) && (e.dur ?? 0) >= 2_000);
    const kinds = [...new Set(inner.map((e) => e.name))].slice(0, 6).join(", ");
    console.log(
      `    ${pageMs(t.ts).toFixed(0).padStart(5)} ms: ${((t.dur ?? 0) / 1000).toFixed(1).padStart(6)} wall, ${((t.tdur ?? 0) / 1000).toFixed(1).padStart(6)} CPU [${kinds}] ${top.map(([n, ms]) => `${n} ${ms.toFixed(1)}`).join("; ")}`,
    );
  }
  const kinds = ["EvaluateScript", "v8.compile", "v8.compileModule", "FunctionCall", "TimerFire", "EventDispatch", "FireAnimationFrame", "ParseHTML", "UpdateLayoutTree", "Layout", "PrePaint", "Paint", "Layerize", "MinorGC", "MajorGC", "V8.GC_SCAVENGER", "ParseAuthorStyleSheet", "v8.deserializeOnBackground"];
  const sums = new Map<string, number>();
  for (const e of byThread.get(pageThread) ?? []) if (kinds.includes(e.name) && inOpen(e)) sums.set(e.name, (sums.get(e.name) ?? 0) + (e.tdur ?? e.dur ?? 0) / 1000);
  console.log(`  main thread by kind (CPU, nested kinds counted in each): ${[...sums].sort((a, b) => b[1] - a[1]).map(([n, ms]) => `${n} ${ms.toFixed(0)}`).join(", ")}`);
  console.log("  JavaScript until interactive (self time, profile):");
  const first = mainTasks[0]?.ts ?? 0;
  for (const [name, ms] of functionsIn(first, anchor.ts + (interactiveAt - documentAt) * 1000).slice(0, 20)) console.log(`    ${ms.toFixed(1).padStart(6)} ms  ${name}`);
  for (const [id, list] of byThread) {
    if (id === pageThread) continue;
    const name = threads.get(id) ?? id;
    const tasks = topLevel(list).filter(inOpen).filter((t) => pageMs(t.ts) >= -2_000);
    const busy = tasks.reduce((s, t) => s + (t.tdur ?? t.dur ?? 0), 0) / 1000;
    if (busy < 2) continue;
    const firstAt = tasks.length ? pageMs(tasks[0].ts) : 0;
    const lastAt = tasks.length ? pageMs(tasks[tasks.length - 1].ts + (tasks[tasks.length - 1].dur ?? 0)) : 0;
    console.log(`  thread ${name} (${id}): ${busy.toFixed(0)} ms CPU in ${tasks.length} tasks, ${firstAt.toFixed(0)}→${lastAt.toFixed(0)} ms`);
  }
}
