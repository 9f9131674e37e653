/**
 * What Lighthouse's simulated phone made of a saved run (issue 27): Lighthouse does not time
 * the page's load, it records one load and simulates slow 4G and a 4x slower CPU over a graph
 * of its requests and main-thread tasks ("lantern"). This prints, for FCP and LCP, the
 * requests and tasks of the graph each is computed from, with their simulated start and end
 * (optimistic and pessimistic estimates; the metric is their mix), and the tasks that make
 * TBT, so a change can be aimed at what the figure actually ends on.
 *
 *   BENCH_LIGHTHOUSE_SAVE=/tmp/lh npm run bench -- --lighthouse --quick
 *   node bench/lantern.mjs /tmp/lh/tree-now-1 [fcp|lcp|tbt ...]
 *
 * `CPU=<n>` recomputes with another CPU slowdown (1 shows the network's part alone).
 * `CPU_TIME=1` first shrinks every task of the recording to the CPU time its thread spent in it
 * (the trace's `tdur`), its events inside scaled with it: lantern multiplies each task's
 * observed wall time, so a run recorded while other processes held the cores counts their
 * time as the page's. This is what the run would have read on a quiet machine, short of the
 * waits a quiet machine has too (a synchronous call to the browser process, for one): an
 * estimate for comparing two builds recorded under load, not a figure for a target.
 */
import { loadArtifacts } from "lighthouse/core/lib/asset-saver.js";
import { LanternFirstContentfulPaint } from "lighthouse/core/computed/metrics/lantern-first-contentful-paint.js";
import { LanternLargestContentfulPaint } from "lighthouse/core/computed/metrics/lantern-largest-contentful-paint.js";
import { LanternInteractive } from "lighthouse/core/computed/metrics/lantern-interactive.js";
import { LanternTotalBlockingTime } from "lighthouse/core/computed/metrics/lantern-total-blocking-time.js";
import { defaultSettings } from "lighthouse/core/config/constants.js";

const [dir, ...wanted] = process.argv.slice(2);
if (!dir) {
  console.error("usage: node bench/lantern.mjs <artifacts dir> [fcp|lcp|tbt ...]");
  process.exit(2);
}
const show = new Set(wanted.length > 0 ? wanted : ["fcp", "lcp", "tbt"]);
const artifacts = await loadArtifacts(dir);
if (process.env.CPU_TIME === "1") toCpuTime(artifacts.Trace.traceEvents);
const cpu = process.env.CPU ? Number(process.env.CPU) : undefined;
const settings = cpu ? { ...defaultSettings, throttling: { ...defaultSettings.throttling, cpuSlowdownMultiplier: cpu } } : defaultSettings;
const context = { computedCache: new Map(), settings, options: {} };
const data = { trace: artifacts.Trace, devtoolsLog: artifacts.DevtoolsLog, gatherContext: artifacts.GatherContext, settings, URL: artifacts.URL, SourceMaps: [], simulator: null };

/**
 * Each thread's outermost complete events (its tasks) made as long as their CPU time, the
 * events inside them moved and scaled in proportion, so nesting and order hold.
 */
function toCpuTime(events) {
  const byThread = new Map();
  for (const event of events) {
    if (event.ph === "M" || event.ts === undefined) continue;
    const key = `${event.pid}:${event.tid}`;
    if (!byThread.has(key)) byThread.set(key, []);
    byThread.get(key).push(event);
  }
  for (const list of byThread.values()) {
    list.sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
    let task = null;
    let ratio = 1;
    let end = -Infinity;
    for (const event of list) {
      if (event.ts >= end) {
        task = null;
        if (event.ph === "X" && typeof event.dur === "number" && typeof event.tdur === "number" && event.dur > 0) {
          task = { ts: event.ts };
          end = event.ts + event.dur;
          ratio = Math.min(1, event.tdur / event.dur);
          event.dur = event.dur * ratio;
          continue;
        }
      }
      if (!task) continue;
      event.ts = task.ts + (event.ts - task.ts) * ratio;
      if (typeof event.dur === "number") event.dur *= ratio;
    }
  }
}

const path = (url) => url.replace(/^https?:\/\/[^/]+/, "");
/** A task's main events, by name (and script or event type), observed milliseconds. */
function contents(node) {
  const names = new Map();
  for (const event of node.childEvents) {
    const detail = event.args?.data?.url ? `:${path(event.args.data.url).slice(0, 28)}` : event.args?.data?.type ? `:${event.args.data.type}` : "";
    const key = event.name + detail;
    names.set(key, (names.get(key) ?? 0) + (event.dur ?? 0) / 1000);
  }
  return [...names].sort((a, b) => b[1] - a[1]).slice(0, 5).filter(([, ms]) => ms >= 0.5).map(([name, ms]) => `${name} ${ms.toFixed(0)}`).join(", ");
}
function describe(node) {
  if (node.type === "network") return `request ${path(node.request.url).slice(0, 60)} (${node.request.resourceType}, ${node.request.transferSize} B)`;
  return `task (observed ${(node.duration / 1000).toFixed(0)} ms): ${contents(node)}`;
}
function printGraph(name, estimate) {
  console.log(`  ${name}: ${Math.round(estimate.timeInMs)} ms`);
  for (const [node, timing] of [...estimate.nodeTimings].sort((a, b) => a[1].startTime - b[1].startTime)) {
    if (node.type === "cpu" && timing.endTime - timing.startTime < 10) continue;
    console.log(`    ${String(Math.round(timing.startTime)).padStart(5)} → ${String(Math.round(timing.endTime)).padStart(5)}  ${describe(node)}`);
  }
}

const fcp = await LanternFirstContentfulPaint.request(data, context);
const lcp = await LanternLargestContentfulPaint.request(data, context);
console.log(`${dir}: FCP ${Math.round(fcp.timing)} ms, LCP ${Math.round(lcp.timing)} ms${cpu ? ` (CPU ${cpu}x)` : ""}`);
for (const [key, result] of [["fcp", fcp], ["lcp", lcp]]) {
  if (!show.has(key)) continue;
  printGraph(`${key.toUpperCase()} optimistic`, result.optimisticEstimate);
  printGraph(`${key.toUpperCase()} pessimistic`, result.pessimisticEstimate);
}
if (show.has("tbt")) {
  const tti = await LanternInteractive.request(data, context);
  const tbt = await LanternTotalBlockingTime.request(data, context);
  console.log(`  TBT ${Math.round(tbt.timing)} ms between FCP ${Math.round(fcp.timing)} and TTI ${Math.round(tti.timing)}; tasks of 50 ms and more (pessimistic):`);
  for (const [node, timing] of [...tbt.pessimisticEstimate.nodeTimings].sort((a, b) => a[1].startTime - b[1].startTime)) {
    const length = timing.endTime - timing.startTime;
    if (node.type !== "cpu" || length < 50) continue;
    const counted = timing.endTime > fcp.timing && timing.startTime < tti.timing;
    console.log(`    ${String(Math.round(timing.startTime)).padStart(5)} ${String(Math.round(length)).padStart(4)} ms ${counted ? "counted" : "       "}  ${contents(node)}`);
  }
}
