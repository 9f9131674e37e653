/**
 * Preloaded into a server the memory scenario starts (`node --expose-gc --import
 * ./bench/memory-probe.mjs ...`): on SIGUSR2 it collects garbage twice and writes the
 * process's memory to MEMORY_PROBE_FILE as one JSON line: process.memoryUsage() and the
 * kernel's /proc/self/smaps_rollup (what RSS is made of). Not part of the server.
 */
import { appendFileSync, readFileSync } from "node:fs";
import path from "node:path";
import v8 from "node:v8";

const file = process.env.MEMORY_PROBE_FILE;

function smapsRollup() {
  const fields = {};
  for (const line of readFileSync("/proc/self/smaps_rollup", "utf8").split("\n")) {
    const match = /^(\w+):\s+(\d+) kB/.exec(line);
    if (match) fields[match[1]] = Number(match[2]) * 1024;
  }
  return fields;
}

/** Resident bytes of glibc's main heap (`[heap]`): where the main thread's malloc lives. */
function mainHeap() {
  let rss = 0;
  let inHeap = false;
  for (const line of readFileSync("/proc/self/smaps", "utf8").split("\n")) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inHeap = line.endsWith("[heap]");
    else if (inHeap && line.startsWith("Rss:")) rss += Number(/(\d+) kB/.exec(line)[1]) * 1024;
  }
  return rss;
}

if (file) {
  process.on("SIGUSR2", () => {
    globalThis.gc?.();
    globalThis.gc?.();
    const usage = process.memoryUsage();
    const smaps = smapsRollup();
    // MEMORY_PROBE_SNAPSHOTS=DIR: a heap snapshot too, for bench/heap-diff.mjs.
    if (process.env.MEMORY_PROBE_SNAPSHOTS) v8.writeHeapSnapshot(path.join(process.env.MEMORY_PROBE_SNAPSHOTS, `${Date.now()}.heapsnapshot`));
    appendFileSync(file, `${JSON.stringify({ at: Date.now(), ...usage, anonymous: smaps.Anonymous, privateDirty: smaps.Private_Dirty, mainHeap: mainHeap(), handles: process.getActiveResourcesInfo().length })}\n`);
  });
}
