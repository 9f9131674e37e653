/**
 * Child processes for the benchmarks: the Cardtree server and the comparison servers,
 * pinned to core 0 with taskset while the load generator runs on core 1; their resident
 * memory read from /proc; and clean stops.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { openSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";

export const ROOT = path.resolve(import.meta.dirname, "..");
export const SERVER_CORE = 0;
export const LOAD_CORE = 1;

/**
 * The variables `npm start` sets before node (package.json's script, e.g. glibc's
 * MALLOC_MMAP_THRESHOLD_), so that every server here runs as `npm start` runs it: they take
 * effect only when the process starts, so the server cannot set them itself.
 */
export function startEnvironment(): Record<string, string> {
  const scripts = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
  const env: Record<string, string> = {};
  for (const word of scripts.start.split(/\s+/)) {
    const assignment = /^([A-Z_][A-Z0-9_]*)=(\S*)$/.exec(word);
    if (!assignment) break;
    env[assignment[1]] = assignment[2];
  }
  return env;
}

/** Children to end when the bench ends, however it ends: pid → whether it leads its own group. */
const children = new Map<number, boolean>();
let endingInstalled = false;

function endChildren(): void {
  for (const [pid, group] of children) {
    try {
      process.kill(group ? -pid : pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  children.clear();
}

/**
 * Ends `child` (its whole process group when it was started detached) when this process exits,
 * or is stopped with Ctrl+C or `kill`: a bench stopped half-way left its servers (each in its
 * own group, so Ctrl+C never reached them) and Lighthouse's Chromium running. Returns the undo,
 * for a child stopped the usual way.
 */
export function endWithBench(child: ChildProcess, ownGroup: boolean): () => void {
  const pid = child.pid;
  if (pid === undefined) return () => undefined;
  if (!endingInstalled) {
    endingInstalled = true;
    process.once("exit", endChildren);
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
      process.once(signal, () => {
        endChildren();
        process.exit(128 + (signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 1));
      });
    }
  }
  children.set(pid, ownGroup);
  return () => children.delete(pid);
}

export function hasCommand(name: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" }).status === 0;
}

/** Moves this process (every thread) to the load core, away from the servers' core. */
export function pinSelfToLoadCore(): boolean {
  return spawnSync("taskset", ["-a", "-p", "-c", String(LOAD_CORE), String(process.pid)], { stdio: "ignore" }).status === 0;
}

/** Moves a running process (every thread) to the servers' core, as the bench starts its servers. */
export function pinToServerCore(pid: number): boolean {
  return spawnSync("taskset", ["-a", "-p", "-c", String(SERVER_CORE), String(pid)], { stdio: "ignore" }).status === 0;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * CPU seconds a process has used, every thread (user + system), from /proc: 100 ticks a
 * second on Linux, so a figure is good to 10 ms. Read after the last ")" (the command's name
 * may hold one).
 */
export function cpuSeconds(pid: number): number {
  const { user, system } = cpuTimes(pid);
  return user + system;
}

/** {@link cpuSeconds} in its two parts: in the process's own code (user) and in the kernel for it (system). */
export function cpuTimes(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

/** Resident set of `pid` and all its descendants, in bytes (tsx's CLI runs node as a child). */
export function treeRss(pid: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // The process ended while we looked.
    }
  }
  let total = 0;
  const stack = [pid];
  while (stack.length > 0) {
    const current = stack.pop()!;
    total += rssOf(current);
    stack.push(...(children.get(current) ?? []));
  }
  return total;
}

function rssOf(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Samples a process tree's RSS (summed with `others`' trees) until stopped; reports the peak. */
export function sampleRss(pid: number, everyMs = 250, others: readonly number[] = []): { stop(): number } {
  const rss = () => [pid, ...others].reduce((sum, each) => sum + treeRss(each), 0);
  let peak = rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, rss());
  }, everyMs);
  return {
    stop: () => {
      clearInterval(timer);
      return Math.max(peak, rss());
    },
  };
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface Pinned {
  url: string;
  port: number;
  process: ChildProcess;
  /** Milliseconds from spawn until `ready` first answered. */
  startMs: number;
  /** RSS of the whole process tree. */
  rss(): number;
  /** RSS of the processes below the one spawned: the server behind `npm start`, without npm. */
  rssBelowRoot(): number;
  stop(): Promise<void>;
}

/**
 * Starts `command` on the server core with PORT set, output to `logFile`, and waits until
 * `readyPath` answers 200. Gives up after `timeoutMs`.
 */
export async function startPinned(options: {
  /** The command line, given the port it must listen on (also in PORT). */
  command: (port: number) => string[];
  env?: Record<string, string>;
  logFile: string;
  readyPath: string;
  timeoutMs?: number;
  cwd?: string;
  /** Listen on this port rather than a free one (a restart that clients must find again). */
  port?: number;
  /** CPU list to run on (default: the server core). */
  cores?: string;
  /** Without the variables `npm start` sets (startEnvironment), to measure what they do. */
  bareEnvironment?: boolean;
}): Promise<Pinned> {
  const port = options.port ?? (await freePort());
  const command = options.command(port);
  const log = openSync(options.logFile, "a");
  const started = performance.now();
  const child = spawn("taskset", ["-c", options.cores ?? String(SERVER_CORE), ...command], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...(options.bareEnvironment ? {} : startEnvironment()), PORT: String(port), HOST: "127.0.0.1", ...options.env },
    stdio: ["ignore", log, log],
    // Its own process group, so a stop reaches the server behind `npm start` and tsx's CLI.
    detached: true,
  });
  const url = `http://127.0.0.1:${port}`;
  const forget = endWithBench(child, true);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = started + (options.timeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${command.join(" ")} exited with ${child.exitCode}; see ${options.logFile}`);
    try {
      const res = await fetch(url + options.readyPath);
      await res.arrayBuffer();
      if (res.ok) break;
    } catch {
      // Not listening yet.
    }
    if (performance.now() > deadline) {
      process.kill(-child.pid!, "SIGKILL");
      throw new Error(`${command.join(" ")} did not become ready; see ${options.logFile}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const startMs = performance.now() - started;
  return {
    url,
    port,
    process: child,
    startMs,
    rss: () => treeRss(child.pid!),
    rssBelowRoot: () => treeRss(child.pid!) - rssOf(child.pid!),
    stop: async () => {
      const signal = (name: NodeJS.Signals) => {
        try {
          process.kill(-child.pid!, name);
        } catch {
          // Already gone.
        }
      };
      if (child.exitCode === null && child.signalCode === null) signal("SIGTERM");
      const timer = setTimeout(() => signal("SIGKILL"), 30_000);
      await exited;
      // npm can exit before the server it started has closed its store: wait for the group.
      while (groupAlive(child.pid!)) await new Promise((resolve) => setTimeout(resolve, 20));
      clearTimeout(timer);
      forget();
    },
  };
}
