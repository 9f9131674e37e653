/**
 * What an Idempotency-Key costs a card write in the garbage collector, by figures the
 * machine's load does not move (issue 26):
 * `npx tsx bench/idempotency-gc.ts [<other checkout>[,<another>...]] [rounds] [seconds]`.
 * `GC_STORE=postgres` runs on the PostgreSQL at DATABASE_URL (or 127.0.0.1:5432), a fresh
 * database a side, dropped after; the embedded store otherwise, a data directory a side.
 *
 * Starts each checkout's compiled server with `--trace-gc-nvp` (V8 prints one line a
 * collection: the bytes allocated since the last one, those that survived and were
 * promoted, its pause), one 1,000-card tree each, then in every round runs plain and keyed
 * card creations (wrk, 16 connections, `seconds` a window, ABBA over kinds and sides, after
 * one uncounted round). Per window and write: the bytes allocated, survived and promoted
 * (the same whatever the load: what a key adds to the collector's work), the scavenges'
 * pauses and their helper threads' time, the server's CPU on its main thread and on its
 * other threads (the collector's helpers, libuv's pool), and write system calls; then the
 * medians, keyed beside plain, per side.
 *
 * Why: timing the key's own code found 40-50 µs a write, wrk ~70 µs more CPU (docs/
 * performance.md, "keycost3", "keycost4"): the rest is work the key's allocations cause
 * elsewhere, which a timer around its code does not see.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CardtreeClient } from "./cardtree-client.js";
import { generateTree } from "./generate.js";
import { queryOnce } from "./pg-once.js";
import { startPinned } from "./processes.js";
import { runCardCreations } from "./wrk.js";

const others = process.argv[2] ? process.argv[2].split(",").map((each) => path.resolve(each)) : [];
const rounds = Number(process.argv[3] ?? 6);
const seconds = Number(process.argv[4] ?? 3);
const postgres = process.env.GC_STORE === "postgres";
const admin = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** CPU seconds of the process's main thread and of all its other threads, from /proc. */
function threadSeconds(pid: number): { main: number; others: number } {
  const seconds = { main: 0, others: 0 };
  for (const thread of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${thread}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const used = (Number(fields[11]) + Number(fields[12])) / 100;
    if (Number(thread) === pid) seconds.main += used;
    else seconds.others += used;
  }
  return seconds;
}

/** Write system calls the process made so far (sockets and files), from /proc. */
function writeCalls(pid: number): number {
  return Number(/^syscw: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"))?.[1] ?? 0);
}

interface Collections {
  allocated: number;
  survived: number;
  promoted: number;
  scavengeMs: number;
  helpersMs: number;
  fullMs: number;
}

/** Sums the `--trace-gc-nvp` lines in `text`: bytes and milliseconds. */
function collections(text: string): Collections {
  const sum: Collections = { allocated: 0, survived: 0, promoted: 0, scavengeMs: 0, helpersMs: 0, fullMs: 0 };
  for (const line of text.split("\n")) {
    if (!line.includes(" pause=")) continue;
    const field = (name: string) => Number(line.match(new RegExp(` ${name.replaceAll(".", "\\.")}=([\\d.]+)`))?.[1] ?? 0);
    sum.allocated += field("allocated");
    sum.survived += field("new_space_survived");
    sum.promoted += field("promoted");
    if (/ gc=s /.test(line)) {
      sum.scavengeMs += field("pause");
      sum.helpersMs += field("background.scavenge.parallel");
    } else {
      sum.fullMs += field("pause") + field("incremental.steps_took");
    }
  }
  return sum;
}

const FIGURES = ["req/s", "main ms", "others ms", "KiB allocated", "KiB survived", "KiB promoted", "scavenge µs", "helpers µs", "full GC µs", "writes"] as const;
type Figure = (typeof FIGURES)[number];

const sides = [path.resolve("."), ...others].map((root, i) => ({ root, name: i === 0 ? "this" : others.length > 1 ? `other${i}` : "other" }));
const servers: { name: string; root: string; dir: string; log: string; database?: string; server: Awaited<ReturnType<typeof startPinned>>; writer: CardtreeClient; tree: string; parent: string }[] = [];
try {
  for (const [i, side] of sides.entries()) {
    const dir = mkdtempSync(path.join(os.tmpdir(), `cardtree-gc-${i}-`));
    let env: Record<string, string> = { DATA_DIR: path.join(dir, "data") };
    let database: string | undefined;
    if (postgres) {
      database = `cardtree_gc_${process.pid}_${i}`;
      await queryOnce(`CREATE DATABASE ${database}`, admin);
      const url = new URL(admin);
      url.pathname = `/${database}`;
      env = { STORE: "postgres", DATABASE_URL: url.toString() };
    }
    const log = path.join(dir, "server.log");
    const server = await startPinned({
      command: () => [process.execPath, "--trace-gc-nvp", path.join(side.root, "dist/server.mjs")],
      cwd: side.root,
      env,
      logFile: log,
      readyPath: "/healthz",
    });
    const writer = await CardtreeClient.signUp(server.url, `gc-${i}@bench.example`);
    const tree = await writer.treeWith("Idempotency", generateTree(1_000, 26));
    const cards = await writer.json<{ _id: string; parentId: string | null }[]>("GET", `/api/trees/${tree}/cards`);
    servers.push({ ...side, dir, log, database, server, writer, tree, parent: cards.find((card) => card.parentId === null)!._id });
  }
  const figures: Record<string, Record<Figure, number[]>> = {};
  for (let round = 0; round <= rounds; round++) {
    const kinds = round % 2 === 0 ? (["plain", "keyed"] as const) : (["keyed", "plain"] as const);
    const order = round % 4 < 2 ? servers : [...servers].reverse();
    for (const kind of kinds) {
      for (const each of order) {
        const pid = each.server.process.pid!;
        const before = { cpu: threadSeconds(pid), calls: writeCalls(pid), logAt: statSync(each.log).size };
        const result = await runCardCreations(each, kind === "keyed", seconds);
        // The writes' lazily kept answers and the last group commit land in their own window.
        await new Promise((resolve) => setTimeout(resolve, 300));
        const cpu = threadSeconds(pid);
        const gc = collections(readFileSync(each.log, "utf8").slice(before.logAt));
        const writes = Math.max(1, result.requests);
        const row: Record<Figure, number> = {
          "req/s": result.requestsPerSecond,
          "main ms": ((cpu.main - before.cpu.main) * 1000) / writes,
          "others ms": ((cpu.others - before.cpu.others) * 1000) / writes,
          "KiB allocated": gc.allocated / 1024 / writes,
          "KiB survived": gc.survived / 1024 / writes,
          "KiB promoted": gc.promoted / 1024 / writes,
          "scavenge µs": (gc.scavengeMs * 1000) / writes,
          "helpers µs": (gc.helpersMs * 1000) / writes,
          "full GC µs": (gc.fullMs * 1000) / writes,
          writes: (writeCalls(pid) - before.calls) / writes,
        };
        console.log(
          `${round === 0 ? "warm-up" : `round ${round}`}: ${each.name} ${kind}: ` +
            FIGURES.map((name) => `${name} ${row[name].toFixed(name.startsWith("KiB") || name.endsWith("ms") || name === "writes" ? 2 : 0)}`).join(", ") +
            `; ${result.errors} errors (load ${os.loadavg()[0].toFixed(1)})`,
        );
        if (round === 0) continue;
        const id = `${each.name} ${kind}`;
        figures[id] ??= Object.fromEntries(FIGURES.map((name) => [name, []])) as unknown as Record<Figure, number[]>;
        for (const name of FIGURES) figures[id][name].push(row[name]);
      }
    }
  }
  console.log(`\nMedians a write (${rounds} windows of ${seconds} s a kind; "writes": write system calls):`);
  for (const side of servers) {
    console.log(`${side.name} (${side.root}):`);
    for (const name of FIGURES) {
      const plain = median(figures[`${side.name} plain`][name]);
      const keyed = median(figures[`${side.name} keyed`][name]);
      const digits = name === "req/s" ? 0 : name.endsWith("µs") ? 1 : 3;
      console.log(`  ${name.padEnd(14)} plain ${plain.toFixed(digits).padStart(9)}  keyed ${keyed.toFixed(digits).padStart(9)}  keyed − plain ${(keyed - plain).toFixed(digits).padStart(9)}`);
    }
  }
} finally {
  await Promise.all(servers.map((each) => each.server.stop()));
  for (const each of servers) {
    rmSync(each.dir, { recursive: true, force: true });
    if (each.database) await queryOnce(`DROP DATABASE IF EXISTS ${each.database} WITH (FORCE)`, admin).catch(() => undefined);
  }
}
