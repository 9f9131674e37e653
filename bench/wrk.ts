/**
 * Running wrk on the load core and reading its figures (requests/s, p50/p99) from the JSON
 * line bench/wrk.lua prints, while the target's memory is sampled.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { LOAD_CORE, ROOT, sampleRss } from "./processes.js";

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Non-2xx/3xx answers and socket errors: a run with any is reported, not trusted. */
  errors: number;
  megabytesPerSecond: number;
  /** Peak resident memory of the target during the run. */
  peakRssMb?: number;
}

export interface LoadOptions {
  url: string;
  seconds: number;
  connections: number;
  headers?: Record<string, string>;
  /** Extra environment for bench/wrk.lua (method, body file, card tree). */
  script?: Record<string, string>;
  /** The target's pid, to sample its memory. */
  targetPid?: number;
  /** Other target pids whose memory is summed with it (several server processes). */
  otherPids?: number[];
  /** wrk threads (default 1); with BENCH_TARGETS, one per target. */
  threads?: number;
  /** CPU list for wrk (default: the load core). */
  cores?: string;
}

/**
 * Waits until `url` answers quickly again. wrk stops with requests still queued in the
 * server (8 slow GraphQL queries are ~10 s of work), which would otherwise be charged to
 * the next scenario.
 */
export async function settle(url: string, timeoutMs = 120_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const started = performance.now();
    try {
      await (await fetch(url)).arrayBuffer();
    } catch {
      return;
    }
    if (performance.now() - started < 20) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function runWrk(options: LoadOptions): Promise<LoadResult> {
  const args = [
    "-c",
    options.cores ?? String(LOAD_CORE),
    "wrk",
    `-t${options.threads ?? 1}`,
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    "--timeout",
    "30s",
    "-s",
    path.join(ROOT, "bench", "wrk.lua"),
  ];
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push("-H", `${name}: ${value}`);
  args.push(options.url);
  const sampler = options.targetPid ? sampleRss(options.targetPid, 250, options.otherPids) : undefined;
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn("taskset", args, { env: { ...process.env, ...options.script }, stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    child.stdout.on("data", (chunk) => (text += chunk));
    child.stderr.on("data", (chunk) => (text += chunk));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited with ${code}: ${text}`))));
  });
  const peak = sampler?.stop();
  await settle(new URL("/healthz", options.url).href);
  const line = output.split("\n").find((l) => l.startsWith("BENCH_JSON "));
  if (!line) throw new Error(`wrk printed no figures: ${output}`);
  const raw = JSON.parse(line.slice("BENCH_JSON ".length)) as Record<string, number>;
  const seconds = raw.duration_us / 1e6;
  return {
    requestsPerSecond: raw.requests / seconds,
    p50Ms: raw.p50_us / 1000,
    p99Ms: raw.p99_us / 1000,
    requests: raw.requests,
    errors: raw.connect_errors + raw.read_errors + raw.write_errors + raw.status_errors + raw.timeouts,
    megabytesPerSecond: raw.bytes / seconds / 1e6,
    peakRssMb: peak === undefined ? undefined : peak / 1e6,
  };
}

/** A server's tree that card creations go to: its address, the tree, the new cards' parent and the writer. */
export interface CardCreationTarget {
  server: { url: string; process: { pid?: number } };
  tree: string;
  parent: string;
  writer: { authorization: string };
}

/**
 * Card creations under `target.parent` for `seconds` (bench/wrk.lua), 16 connections, each
 * request with its own Idempotency-Key when `keyed`: the two kinds the key's A/B benches
 * (idempotency-ab.ts, idempotency-gc.ts) compare.
 */
export function runCardCreations(target: CardCreationTarget, keyed: boolean, seconds: number): Promise<LoadResult> {
  return runWrk({
    url: `${target.server.url}/api/trees/${target.tree}/cards`,
    headers: { Authorization: target.writer.authorization },
    script: { BENCH_CARD_TREE: target.tree, BENCH_CARD_PARENT: target.parent, ...(keyed ? { BENCH_IDEMPOTENCY_KEYS: "1" } : {}) },
    seconds,
    connections: 16,
    targetPid: target.server.process.pid,
  });
}
