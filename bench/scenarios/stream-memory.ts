/**
 * What one open event stream costs a server in memory (issue 27, many readers): Cardtree's
 * compiled server against a bare node:http server holding the same streams
 * (bench/raw-sse-server.mjs), each started as `npm start` would (startEnvironment) with
 * bench/memory-probe.mjs preloaded. For each count of streams: the server's memory after
 * two full collections, with none open and with that many open, and the difference a
 * stream: RSS, the JS heap, memory outside it (`external`, ArrayBuffers) and the kernel's
 * anonymous memory. Also the RSS as the many-readers bench reads it (no collection first).
 * Then the fan-out of `--rounds` events, one at a time: from the request that makes one
 * (the raw server's POST /publish, Cardtree's card edit) to its arrival at the last of a
 * sample of readers (every 20th and the last 100 opened; the others are not read, so that
 * this process's reading is not what is timed), and the server's CPU time per event.
 *
 *   npm run build && npx tsx bench/scenarios/stream-memory.ts [--streams 1000,3000] [--only raw|cardtree] [--rounds 10] [--cpu-prof DIR]
 *
 * Small and cheap (a few seconds a count); not part of `npm run bench`. The readers are
 * raw HTTP connections from this process.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CardtreeClient } from "../cardtree-client.js";
import { generateTree } from "../generate.js";
import { cpuSeconds, startPinned, treeRss, type Pinned } from "../processes.js";
import { openUnread } from "./live.js";

interface Probe {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  anonymous: number;
  privateDirty: number;
  mainHeap: number;
  handles: number;
}

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

const counts = (argument("streams") ?? "1000,3000").split(",").map(Number);
const only = argument("only");
const rounds = Number(argument("rounds") ?? 10);
const workDir = mkdtempSync(path.join(os.tmpdir(), "stream-memory-"));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The CPU time (user and system) the process has used, in ms: unlike wall time, hardly
 * stretched by other processes on the core, so a fan-out's cost can be read on a busy
 * machine. The kernel counts it in ticks (10 ms), hence the mean over several events.
 */
function cpuMs(pid: number): number {
  return cpuSeconds(pid) * 1000;
}

async function probe(server: Pinned, file: string): Promise<Probe> {
  writeFileSync(file, "");
  process.kill(server.process.pid!, "SIGUSR2");
  for (let waited = 0; waited < 60_000; waited += 50) {
    await sleep(50);
    const text = readFileSync(file, "utf8").trim();
    if (text) return JSON.parse(text) as Probe;
  }
  throw new Error("the memory probe did not answer");
}

/** A reader: the `id:` lines it read, with when (while sampled; the others are read by nobody). */
interface Reader {
  close(): void;
  seen: Map<number, number>;
}

async function open(url: string, headers: Record<string, string>, sampled: boolean, onEvent: () => void): Promise<Reader> {
  const seen = new Map<number, number>();
  const socket = await openUnread(url, headers, (revision, at) => {
    seen.set(revision, at);
    onEvent();
  });
  if (sampled) socket.read();
  return { close: socket.close, seen };
}

/** Streams read while an event is timed: every 20th and the last 100 opened (written last). */
const SAMPLE_EVERY = 20;
const TAIL = 100;

async function measure(label: string, server: Pinned, url: string, headers: Record<string, string>, publish: () => Promise<number>): Promise<void> {
  const file = path.join(workDir, `${label}.probe`);
  // A first round of 200 warms the code paths up (and lets GraphQL's start-up load finish).
  for (const [index, count] of [200, ...counts].entries()) {
    if (index === 0) console.log(`${label}: a warm-up with 200 streams first`);
    await sleep(index === 0 ? 3000 : 500);
    const before = await probe(server, file);
    const readers: Reader[] = [];
    let heard: () => void = () => undefined;
    const batches: number[] = [];
    for (let left = count - TAIL; left > 0; left -= 500) batches.push(Math.min(500, left));
    batches.push(TAIL);
    for (const batch of batches) {
      const start = readers.length;
      const sampled = (i: number) => (start + i) % SAMPLE_EVERY === 0 || start + i >= count - TAIL;
      readers.push(...(await Promise.all(Array.from({ length: batch }, (_, i) => open(url, headers, sampled(i), () => heard())))));
    }
    await sleep(1000);
    const rssAsBenchReads = treeRss(server.process.pid!);
    const after = await probe(server, file);
    const perStream = (key: keyof Probe) => `${((after[key] - before[key]) / count / 1024).toFixed(1)} KB`;
    console.log(
      `${label}, ${count} streams: RSS ${(before.rss / 1e6).toFixed(1)} -> ${(after.rss / 1e6).toFixed(1)} MB after GC (${(rssAsBenchReads / 1e6).toFixed(1)} MB before it); a stream: ` +
        (["rss", "anonymous", "mainHeap", "heapUsed", "heapTotal", "external", "arrayBuffers"] as const).map((key) => `${key} ${perStream(key)}`).join(", ") +
        `; handles ${before.handles} -> ${after.handles}`,
    );
    // Fan-out: from the request that makes an event to the last sampled reader having it.
    const sample = readers.filter((_, i) => i % SAMPLE_EVERY === 0 || i >= count - TAIL);
    const delays: number[] = [];
    const cpuBefore = cpuMs(server.process.pid!);
    for (let round = 0; round < rounds; round++) {
      const sent = performance.now();
      const id = await publish();
      await new Promise<void>((resolve) => {
        heard = () => sample.every((r) => r.seen.has(id)) && resolve();
        heard();
      });
      delays.push(Math.max(...sample.map((r) => r.seen.get(id)!)) - sent);
    }
    const cpu = (cpuMs(server.process.pid!) - cpuBefore) / rounds;
    delays.sort((a, b) => a - b);
    console.log(
      `${label}, ${count} streams: fan-out of ${rounds} events (${sample.length} streams read): p50 ${delays[Math.floor(rounds / 2)].toFixed(1)} ms, ` +
        `max ${delays.at(-1)!.toFixed(1)} ms; the server's CPU time an event ${cpu.toFixed(1)} ms`,
    );
    for (const reader of readers) reader.close();
    await sleep(1000);
  }
}

const probeEnv = (label: string) => ({ MEMORY_PROBE_FILE: path.join(workDir, `${label}.probe`) });
/** `--cpu-prof DIR`: the servers write CPU profiles there (bench/profile-summary.ts reads them). */
const profileDir = argument("cpu-prof");
const node = (script: string) => [process.execPath, "--expose-gc", ...(profileDir ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : []), "--import", "./bench/memory-probe.mjs", script];
console.log(`load average ${os.loadavg().map((n) => n.toFixed(1)).join(", ")}`);
try {
  if (only !== "cardtree") {
    const raw = await startPinned({
      command: () => node("bench/raw-sse-server.mjs"),
      env: probeEnv("raw"),
      logFile: path.join(workDir, "raw.log"),
      readyPath: "/healthz",
    });
    try {
      let published = 0;
      await measure("raw", raw, `${raw.url}/events`, {}, async () => {
        const res = await fetch(`${raw.url}/publish`, { method: "POST" });
        await res.arrayBuffer();
        return ++published;
      });
    } finally {
      await raw.stop();
    }
  }
  if (only !== "raw") {
    const dir = path.join(workDir, "data");
    mkdirSync(dir);
    const max = String(Math.max(...counts));
    const server = await startPinned({
      command: () => node("dist/server.mjs"),
      env: { ...probeEnv("cardtree"), DATA_DIR: dir, LIVE_STREAMS_PER_USER: max, LIVE_STREAMS_PER_ADDRESS: max, LIVE_STREAMS_TOTAL: max, MAX_CONNECTIONS_PER_ADDRESS: "0" },
      logFile: path.join(workDir, "cardtree.log"),
      readyPath: "/healthz",
    });
    try {
      const reader = await CardtreeClient.signUp(server.url, "memory@bench.example");
      const tree = await reader.treeWith("Stream memory", generateTree(100, 9));
      const [card] = await reader.json<{ _id: string }[]>("GET", `/api/trees/${tree}/cards`);
      let edits = 0;
      await measure("cardtree", server, `${server.url}/api/trees/${tree}/events`, { authorization: reader.authorization }, async () => {
        const res = await reader.request("PUT", `/api/trees/${tree}/cards/${card._id}`, { content: `Edit ${++edits}` });
        await res.arrayBuffer();
        return Number(res.headers.get("x-tree-revision"));
      });
    } finally {
      await server.stop();
    }
  }
} finally {
  console.log(`load average ${os.loadavg().map((n) => n.toFixed(1)).join(", ")}`);
  rmSync(workDir, { recursive: true, force: true });
}
