/**
 * What an Idempotency-Key costs a card write, measured so that the machine's load moves it
 * little (issue 26):
 * `npx tsx bench/idempotency-count.ts [<other checkout>[,<another>...]] [writes] [rounds]`.
 *
 * Starts each checkout's compiled server (embedded store, a fresh data directory, a
 * 1,000-card tree; with `COUNT_STORE=postgres`, a fresh database on the PostgreSQL at
 * DATABASE_URL or 127.0.0.1:5432, dropped after), warms it up with plain and keyed creations (COUNT_WARM rounds of
 * `writes` each, default 2), then in every round sends exactly `writes` plain creations and
 * `writes` keyed ones (16 keep-alive connections, ABBA order over kinds and sides) while
 * one of two tools watches the server:
 *
 * - `COUNT_WITH=perf` (the useful one): `perf record -e cpu-clock` samples the server's
 *   on-CPU time (2,000 a second, every thread) with `--perf-basic-prof`, so JavaScript
 *   functions have names; what the neighbours' load changes is how long a sample's work
 *   takes, not which function is sampled. `COUNT_CALLS=1` records call chains too.
 *   Figures: samples a write.
 * - otherwise callgrind (`valgrind --tool=callgrind`, instrumentation switched on for the
 *   windows only): instructions a write, every thread. Slow (a window of 400 writes takes
 *   minutes), and its windows still differ by a third: V8's compiler keeps working after a
 *   warm-up under valgrind, and timed work (the credential cache's five minutes, the GC's
 *   tasks) falls in whichever window runs then.
 *
 * - `COUNT_WITH=blocks` (PostgreSQL only): the database's buffer accesses a write (and rows
 *   written), from `pg_stat_database`; exact whatever the machine's load, and it follows
 *   the database's side only.
 *
 * On PostgreSQL, a second perf samples the whole machine, and of it the database's
 * processes that served the Cardtree server during the window (its pools' connections, in
 * `pg_stat_activity` before and after) are counted too; each window prints the two apart:
 * the key's cost is the sum.
 *
 * Prints each window, then per side the median per write, plain and keyed, and the keyed
 * extra. With COUNT_KEEP set, the data directories (with perf's `window<n>.data` or
 * callgrind's dumps, numbered in window order over all sides) are kept for `perf report`
 * or `callgrind_annotate`; perf reads the JavaScript names from /tmp/perf-<pid>.map.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { CardtreeClient } from "./cardtree-client.js";
import { generateTree } from "./generate.js";
import { ADMIN_URL, databaseUrl, queryOnce } from "./pg-once.js";
import { startPinned } from "./processes.js";

const others = process.argv[2] ? process.argv[2].split(",").map((each) => path.resolve(each)) : [];
const writes = Number(process.argv[3] ?? 2000);
const rounds = Number(process.argv[4] ?? 4);
const CONNECTIONS = 16;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Sends exactly `count` card creations over CONNECTIONS keep-alive connections; keyed ones carry fresh keys. */
async function create(url: URL, authorization: string, tree: string, parent: string, count: number, keyed: boolean, tag: string): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  let sent = 0;
  const one = (n: number) =>
    new Promise<void>((resolve, reject) => {
      const body = `{"treeId":"${tree}","parentId":"${parent}","position":${100000 + n},"content":"## Bench card ${n}\\n\\nWritten by the counter."}`;
      const headers: Record<string, string> = { authorization, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) };
      if (keyed) headers["idempotency-key"] = `count-${tag}-${n}`;
      const req = http.request({ host: url.hostname, port: url.port, path: `/api/trees/${tree}/cards`, method: "POST", headers, agent }, (res) => {
        res.resume();
        res.on("end", () => (res.statusCode === 201 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on("error", reject);
      req.end(body);
    });
  const loop = async () => {
    while (sent < count) await one(sent++);
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  agent.destroy();
}

/** callgrind_control finds the server by a pipe named after the HOST variable, which startPinned sets to the address. */
const control = (pid: number, ...args: string[]) =>
  new Promise<void>((resolve, reject) =>
    spawn("callgrind_control", [...args, String(pid)], { stdio: process.env.COUNT_DEBUG ? "inherit" : "ignore", env: { ...process.env, HOST: "127.0.0.1" } }).once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`callgrind_control ${args.join(" ")}: ${code}`)))),
  );
let dumps = 0;

/** Counts the server's instructions (callgrind, every thread) while `work` runs. */
async function instructionsDuring(pid: number, dir: string, work: () => Promise<void>): Promise<number> {
  await control(pid, "--instr=on");
  await control(pid, "--zero");
  await work();
  const name = `window${++dumps}`;
  await control(pid, `--dump=${name}`);
  await control(pid, "--instr=off");
  for (const file of readdirSync(dir).filter((each) => each.startsWith("callgrind.out"))) {
    const text = readFileSync(path.join(dir, file), "utf8");
    if (!text.includes(`desc: Trigger: Client Request: ${name}`) && !text.includes(name)) continue;
    const totals = /^(?:totals|summary): (\d+)/m.exec(text);
    if (totals) return Number(totals[1]);
  }
  throw new Error(`no callgrind dump named ${name} in ${dir}`);
}

const counting = process.env.COUNT_WITH === "blocks";
const sampling = process.env.COUNT_WITH === "perf" || counting;
const onPostgres = process.env.COUNT_STORE === "postgres";
if (onPostgres && !sampling) throw new Error("COUNT_STORE=postgres needs COUNT_WITH=perf or blocks: callgrind cannot follow the database's processes");
if (counting && !onPostgres) throw new Error("COUNT_WITH=blocks counts PostgreSQL's buffer accesses: it needs COUNT_STORE=postgres");
const databases: string[] = [];
const sql = <T extends Record<string, unknown>>(text: string, database?: string) => queryOnce<T>(text, database ? databaseUrl(database) : ADMIN_URL);

/** The database server processes that serve `database` now (the Cardtree server's pools), bar this query's own. */
async function backendsOf(database: string): Promise<number[]> {
  const rows = await sql<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`);
  return rows.map((row) => row.pid);
}

/** Runs `perf record` with `args` while `work` runs; returns `perf report`'s lines for `sort`. */
async function perfDuring(file: string, args: readonly string[], sort: string, work: () => Promise<void>): Promise<string[]> {
  const perf = spawn("perf", ["record", "-e", "cpu-clock", "-F", "2000", ...args, "-o", file], { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => perf.once("exit", () => resolve()));
  // perf writes its file's header once it is attached; under load that takes a while.
  for (let waited = 0; !existsSync(file) && waited < 20_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setTimeout(resolve, 300));
  await work();
  perf.kill("SIGINT");
  await exited;
  const report = spawn("perf", ["report", "-i", file, "--stdio", "--sort", sort, "-F", `sample,${sort}`], { stdio: ["ignore", "pipe", "ignore"] });
  let out = "";
  report.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  await new Promise((resolve) => report.once("exit", resolve));
  return out.split("\n");
}

/**
 * Samples the server's on-CPU time (perf, cpu-clock) while `work` runs, into
 * `dir`/window<n>.data; returns the samples. With `database` (PostgreSQL), a second perf
 * samples the whole machine into `dir`/database<n>.data, and the samples of the database's
 * processes that served `database` during the window (listed before and after it: the pool
 * opens and closes connections) are returned apart.
 */
async function samplesDuring(pid: number, dir: string, work: () => Promise<void>, database?: string): Promise<{ all: number; database: number }> {
  const n = ++dumps;
  // The header's "# Samples:" is rounded ("25K"): the sample column summed is exact.
  const sum = (lines: readonly string[], take: (what: string) => boolean = () => true) => {
    let total = 0;
    for (const line of lines) {
      const row = /^\s*(\d+)\s+(.*\S)\s*$/.exec(line);
      if (row && take(row[2])) total += Number(row[1]);
    }
    return total;
  };
  const server = (run: () => Promise<void>) => perfDuring(path.join(dir, `window${n}.data`), [...(process.env.COUNT_CALLS ? ["-g"] : []), "-p", String(pid)], "comm", run);
  if (!database) return { all: sum(await server(work)), database: 0 };
  const before = await backendsOf(database);
  let serverLines: string[] = [];
  const machineLines = await perfDuring(path.join(dir, `database${n}.data`), ["-a"], "pid", async () => {
    serverLines = await server(work);
  });
  const served = new Set([...before, ...(await backendsOf(database))]);
  // "pid" lines read "<tid>:<command>"; a database process is one thread, so tid is its pid.
  const db = sum(machineLines, (what) => served.has(Number.parseInt(what, 10)) && what.endsWith(":postgres"));
  const own = sum(serverLines);
  return { all: own + db, database: db };
}

/**
 * The database's buffer accesses (shared blocks hit or read) and rows written (inserted,
 * updated, deleted) while `work` runs, from `pg_stat_database`: what PostgreSQL did for the
 * writes, the same whatever else the machine runs. A connection reports its counters at
 * most once a second while busy and within 10 s once idle (PostgreSQL 15), hence the waits
 * on either side: with 1.5 s, a window's rows written a write moved by a fifth.
 */
async function blocksDuring(database: string, work: () => Promise<void>): Promise<{ all: number; database: number }> {
  const read = async () =>
    (await sql<{ blocks: string; rows: string }>(`SELECT blks_hit + blks_read AS blocks, tup_inserted + tup_updated + tup_deleted AS rows FROM pg_stat_database WHERE datname = '${database}'`))[0];
  const settle = () => new Promise((resolve) => setTimeout(resolve, 11_000));
  await settle();
  const before = await read();
  await work();
  await settle();
  const after = await read();
  return { all: Number(after.blocks) - Number(before.blocks), database: Number(after.rows) - Number(before.rows) };
}

/** A figure a write in the unit of the tool that counted it. */
const perWrite = (value: number) =>
  counting ? `${value.toFixed(2)} blocks a write` : sampling ? `${value.toFixed(3)} samples a write` : `${(value / 1000).toFixed(0)} k instructions a write`;

const sides = [{ name: "this", root: path.resolve(".") }, ...others.map((root, i) => ({ name: others.length === 1 ? "other" : `other${i + 1}`, root }))];
const servers: { name: string; pid: number; url: URL; writer: CardtreeClient; tree: string; parent: string; stop(): Promise<void>; dir: string; database?: string }[] = [];
try {
  for (const side of sides) {
    const dir = mkdtempSync(path.join(os.tmpdir(), `idem-count-${side.name}-`));
    let env: Record<string, string> = { DATA_DIR: dir };
    let database: string | undefined;
    if (onPostgres) {
      database = `cardtree_idem_count_${side.name}_${Date.now()}`;
      await sql(`CREATE DATABASE ${database}`);
      databases.push(database);
      env = { ...env, STORE: "postgres", DATABASE_URL: databaseUrl(database) };
    }
    const server = await startPinned({
      command: () => sampling
          ? // V8 also writes a log with --perf-basic-prof: into the data directory, not the checkout.
            [process.execPath, "--perf-basic-prof", "--no-logfile-per-isolate", `--logfile=${path.join(dir, "v8.log")}`, path.join(side.root, "dist/server.mjs")] : [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        `--callgrind-out-file=${path.join(dir, "callgrind.out")}`,
        process.execPath,
        path.join(side.root, "dist/server.mjs"),
      ],
      cwd: side.root,
      env,
      logFile: path.join(dir, "server.log"),
      readyPath: "/healthz",
      timeoutMs: 300_000,
    });
    const writer = await CardtreeClient.signUp(server.url, `count-${side.name}@bench.example`);
    const tree = await writer.treeWith("Idempotency", generateTree(1_000, 26));
    const cards = await writer.json<{ _id: string; parentId: string | null }[]>("GET", `/api/trees/${tree}/cards`);
    const parent = cards.find((c) => c.parentId === null)!._id;
    const each = { name: side.name, pid: server.process.pid!, url: new URL(server.url), writer, tree, parent, stop: () => server.stop(), dir, database };
    servers.push(each);
    for (let i = 0; i < Number(process.env.COUNT_WARM ?? 2); i++) {
      await create(each.url, writer.authorization, tree, parent, writes, false, `warm${i}`);
      await create(each.url, writer.authorization, tree, parent, writes, true, `warm${i}`);
    }
  }
  const figures: Record<string, number[]> = {};
  for (let round = 0; round < rounds; round++) {
    const kinds = round % 2 === 0 ? [false, true] : [true, false];
    const order = round % 4 < 2 ? servers : [...servers].reverse();
    for (const keyed of kinds) {
      for (const each of order) {
        const work = () => create(each.url, each.writer.authorization, each.tree, each.parent, writes, keyed, `r${round}`);
        const id = `${each.name} ${keyed ? "keyed" : "plain"}`;
        let count: number;
        let apart = "";
        if (counting) {
          const blocks = await blocksDuring(each.database!, work);
          count = blocks.all;
          apart = `, ${(blocks.database / writes).toFixed(2)} rows written a write`;
        } else if (sampling) {
          const samples = await samplesDuring(each.pid, each.dir, work, each.database);
          count = samples.all;
          if (each.database) {
            (figures[`${id} database`] ??= []).push(samples.database / writes);
            apart = `: Cardtree ${((samples.all - samples.database) / writes).toFixed(3)}, PostgreSQL ${(samples.database / writes).toFixed(3)}`;
          }
        } else count = await instructionsDuring(each.pid, each.dir, work);
        (figures[id] ??= []).push(count / writes);
        console.log(`round ${round + 1}: ${id}: ${perWrite(count / writes)}${apart} (load ${os.loadavg()[0].toFixed(1)})`);
      }
    }
  }
  for (const side of sides) {
    const plain = median(figures[`${side.name} plain`]);
    const keyed = median(figures[`${side.name} keyed`]);
    console.log(
      `${side.name} (${side.root}): plain ${perWrite(plain)}, keyed ${perWrite(keyed)}; ` +
        `keyed extra ${((100 * (keyed - plain)) / plain).toFixed(1)}%, plain/keyed ${(plain / keyed).toFixed(3)}`,
    );
    if (onPostgres && !counting) {
      const plainDb = median(figures[`${side.name} plain database`]);
      const keyedDb = median(figures[`${side.name} keyed database`]);
      console.log(`  of which PostgreSQL: plain ${perWrite(plainDb)}, keyed ${perWrite(keyedDb)}; Cardtree alone: plain ${perWrite(plain - plainDb)}, keyed ${perWrite(keyed - keyedDb)} (medians apart)`);
    }
  }
} finally {
  for (const each of servers) {
    await each.stop();
    if (process.env.COUNT_KEEP) console.log(`kept ${each.dir}`);
    else rmSync(each.dir, { recursive: true, force: true });
  }
  for (const database of databases) await sql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
}
