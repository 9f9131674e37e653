/**
 * `npm run bench -- --pg-writes` (issue 27): card writes on PostgreSQL against the embedded
 * store with `SYNC=on` (each write fdatasynced before it is answered, as PostgreSQL's commit
 * is with `synchronous_commit = on`), and against the PostgreSQL store of `BENCH_BASELINE`
 * (default `main`), side by side.
 *
 * Each side is a compiled server on a data directory (and, for PostgreSQL, a database) of
 * its own, pinned to the server core (the database runs where the system puts it), with the
 * same four 1k-card trees seeded through the API. The three servers run together and take
 * their load in turn: one server's speed drifts by up to 2× over tens of seconds with nothing
 * else running (docs/performance.md, session 17), so for each load the sides run short
 * windows back to back (a fifth of `seconds`, five rounds of them per round asked), the order
 * turning each round, and the target reads the median of the rounds' own ratios, PostgreSQL
 * over the embedded store, with their middle half. Three loads:
 * - one tree, 16 connections: one busy document (its writes queue on the tree's lock, so
 *   nothing of one tree commits together: the commit's own cost is what counts);
 * - four trees, 16 connections (four wrk threads, a tree each): writes that may commit
 *   together;
 * - one connection: the latency a lone writer sees.
 * The databases are made on `DATABASE_URL`'s server (or postgres@127.0.0.1:5432) and dropped.
 *
 * Beside req/s, which this shared machine's load swings from round to round, each figure
 * notes the CPU a write cost: the server process's, and on PostgreSQL its backends' (the
 * database's processes serving that side's database, read from /proc, so the database must
 * run on this machine; otherwise only the server's is given).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { CardtreeClient } from "../cardtree-client.js";
import { generateTree } from "../generate.js";
import { queryOnce } from "../pg-once.js";
import { cpuSeconds, ROOT, startPinned, type Pinned } from "../processes.js";
import { median, middleHalf, type Report } from "../report.js";
import { runWrk, settle } from "../wrk.js";
import { buildBaseline } from "./lighthouse.js";
import { pairedWindows } from "./writes.js";
import { adminQuery, adminUrl, databaseUrl } from "./scale.js";

interface Side {
  id: string;
  label: string;
  cwd: string;
  env: Record<string, string>;
}

interface Seeded {
  dataDir: string;
  email: string;
  password: string;
  trees: { id: string; parent: string }[];
}

const TREES = 4;

/** The backends serving `database` now (their process ids), or none when they cannot be listed. */
async function backends(admin: string, database: string): Promise<number[]> {
  const rows = await queryOnce<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", admin, [database]);
  return rows.map((r) => r.pid);
}

/** CPU seconds of a process, or 0 when it is gone or not on this machine. */
function cpuOf(pid: number): number {
  try {
    return cpuSeconds(pid);
  } catch {
    return 0;
  }
}

async function startSide(side: Side, dataDir: string, workDir: string): Promise<Pinned> {
  return startPinned({
    command: () => [process.execPath, "dist/server.mjs"],
    cwd: side.cwd,
    env: { DATA_DIR: dataDir, LOG: "off", ...side.env },
    logFile: path.join(workDir, `pg-writes-${side.id}.log`),
    readyPath: "/readyz",
    timeoutMs: 180_000,
  });
}

export async function pgWriteScenarios(options: { report: Report; workDir: string; seconds: number; rounds: number }): Promise<void> {
  const { report, workDir } = options;
  const admin = adminUrl();
  const revision = process.env.BENCH_BASELINE ?? "main";
  const databases = [`cardtree_bench_${randomBytes(6).toString("hex")}`, `cardtree_bench_${randomBytes(6).toString("hex")}`];
  for (const name of databases) await adminQuery(admin, `CREATE DATABASE ${name}`);
  report.note(`pg-writes: databases ${databases.join(", ")} on ${new URL(admin).host}, dropped at the end`);
  try {
    console.log(`Building the baseline server (${revision}) for comparison...`);
    const baselineDir = buildBaseline(workDir, revision, "pg-writes-baseline");
    const sides: Side[] = [
      { id: "nedb", label: "embedded, SYNC=on", cwd: ROOT, env: { SYNC: "on" } },
      { id: "pg", label: "PostgreSQL, group commit", cwd: ROOT, env: { STORE: "postgres", DATABASE_URL: databaseUrl(admin, databases[0]) } },
      { id: "pg-before", label: `PostgreSQL, ${revision}`, cwd: baselineDir, env: { STORE: "postgres", DATABASE_URL: databaseUrl(admin, databases[1]) } },
    ];
    const seeded = new Map<string, Seeded>();
    for (const side of sides) {
      const dataDir = path.join(workDir, `pg-writes-${side.id}`);
      mkdirSync(dataDir);
      const server = await startSide(side, dataDir, workDir);
      const client = await CardtreeClient.signUp(server.url, `writer-${side.id}@bench.example`);
      const trees: Seeded["trees"] = [];
      for (let i = 0; i < TREES; i++) {
        const id = await client.treeWith(`Writes ${i}`, generateTree(1_000, 4 + i));
        const cards = await client.json<{ _id: string; parentId: string | null }[]>("GET", `/api/trees/${id}/cards`);
        trees.push({ id, parent: cards.find((c) => c.parentId === null)!._id });
      }
      seeded.set(side.id, { dataDir, email: client.email, password: client.password, trees });
      await server.stop();
    }

    const loads = [
      { id: "one-tree", label: "create cards, 16 connections, one 1k-card tree" },
      { id: "four-trees", label: "create cards, 16 connections over four 1k-card trees" },
      { id: "single", label: "create cards, one connection, one 1k-card tree" },
    ] as const;
    type Figures = { rps: number[]; p50: number[]; p99: number[]; serverCpu: number[]; databaseCpu: number[]; errors: number };
    const figures = new Map<string, Figures>();
    const entry = (key: string) => {
      let f = figures.get(key);
      if (!f) figures.set(key, (f = { rps: [], p50: [], p99: [], serverCpu: [], databaseCpu: [], errors: 0 }));
      return f;
    };
    // Every side's server runs for the whole measurement (only one is loaded at a time), so the
    // sides' windows can alternate closely: see the file's comment on pairs.
    const running = new Map<string, Pinned>();
    try {
      for (const side of sides) {
        const setup = seeded.get(side.id)!;
        const server = await startSide(side, setup.dataDir, workDir);
        running.set(side.id, server);
        const [first] = setup.trees;
        // Warm-up, not counted: a fresh process compiles its write path on the first requests.
        await runWrk({
          url: `${server.url}/api/trees/${first.id}/cards`,
          headers: { Authorization: new CardtreeClient(server.url, setup.email, setup.password).authorization },
          script: { BENCH_CARD_TREE: first.id, BENCH_CARD_PARENT: first.parent },
          seconds: 2,
          connections: 4,
        });
        await settle(server.url);
      }
      const window = async (load: (typeof loads)[number], side: Side, seconds: number) => {
        const setup = seeded.get(side.id)!;
        const server = running.get(side.id)!;
        const { authorization } = new CardtreeClient(server.url, setup.email, setup.password);
        const at = `127.0.0.1:${server.port}`;
        const [first] = setup.trees;
        const database = side.env.DATABASE_URL ? new URL(side.env.DATABASE_URL).pathname.slice(1) : null;
        // Every server quiet first: the others' work after their own windows (checkpoints,
        // compactions) would otherwise run on the shared core during this one.
        for (const other of running.values()) await settle(other.url);
        const serverBefore = cpuOf(server.process.pid!);
        const backendsBefore = database ? await backends(admin, database) : [];
        const databaseBefore = new Map(backendsBefore.map((pid) => [pid, cpuOf(pid)]));
        const result = await runWrk({
          url: `${server.url}/api/trees/${first.id}/cards`,
          headers: { Authorization: authorization },
          script:
            load.id === "four-trees"
              ? { BENCH_TARGETS: setup.trees.map((t) => `${at}:${t.id}:${t.parent}`).join(",") }
              : { BENCH_CARD_TREE: first.id, BENCH_CARD_PARENT: first.parent },
          threads: load.id === "four-trees" ? TREES : 1,
          seconds,
          connections: load.id === "single" ? 1 : 16,
          targetPid: server.process.pid!,
        });
        const writes = Math.max(1, result.requests);
        let databaseCpu: number | null = null;
        if (database) {
          // Backends opened during the load count whole; those gone since count what they used before it ended (unknown: 0).
          const after = new Set([...backendsBefore, ...(await backends(admin, database))]);
          let used = 0;
          for (const pid of after) used += Math.max(0, cpuOf(pid) - (databaseBefore.get(pid) ?? 0));
          databaseCpu = (used * 1000) / writes;
        }
        await settle(server.url);
        return { result, serverCpu: ((cpuOf(server.process.pid!) - serverBefore) * 1000) / writes, databaseCpu };
      };
      const { windowSeconds, pairs } = pairedWindows(options.seconds, options.rounds);
      const ratios = new Map<string, number[]>();
      for (const load of loads) {
        for (const side of sides) await window(load, side, 1);
        for (let pair = 0; pair < pairs; pair++) {
          // The sides' order turns every pair (ABC, BCA, CAB, ...), so no side always follows another.
          const order = sides.map((_, i) => sides[(i + pair) % sides.length]);
          const rates = new Map<string, number>();
          for (const side of order) {
            const { result, serverCpu, databaseCpu } = await window(load, side, windowSeconds);
            const f = entry(`${load.id} ${side.id}`);
            f.rps.push(result.requestsPerSecond);
            f.p50.push(result.p50Ms);
            f.p99.push(result.p99Ms);
            f.errors += result.errors;
            f.serverCpu.push(serverCpu);
            if (databaseCpu !== null) f.databaseCpu.push(databaseCpu);
            rates.set(side.id, result.requestsPerSecond);
          }
          for (const id of ["pg", "pg-before"]) {
            const key = `${load.id} ${id}`;
            if (!ratios.has(key)) ratios.set(key, []);
            ratios.get(key)!.push(rates.get(id)! / Math.max(1e-9, rates.get("nedb")!));
          }
        }
      }
      for (const load of loads) {
        for (const side of sides) {
          const f = figures.get(`${load.id} ${side.id}`)!;
          report.add({
            id: `pg-writes-${load.id}-${side.id}`,
            scenario: `${load.label}, ${side.label} (median of ${f.rps.length} windows of ${windowSeconds} s)`,
            requestsPerSecond: median(f.rps),
            p50Ms: median(f.p50),
            p99Ms: median(f.p99),
            errors: f.errors,
            note:
              `${Math.min(...f.rps).toFixed(0)}–${Math.max(...f.rps).toFixed(0)} req/s; CPU a write: server ${median(f.serverCpu).toFixed(2)} ms` +
              (f.databaseCpu.length > 0 ? ` + database ${median(f.databaseCpu).toFixed(2)} ms` : ""),
          });
        }
        const now = ratios.get(`${load.id} pg`)!;
        const before = ratios.get(`${load.id} pg-before`)!;
        report.target({
          name: `PostgreSQL / embedded (SYNC=on) card writes, ${load.label}, median of ${now.length} side-by-side rounds (middle half ${middleHalf(now)})`,
          wanted: ">= 0.8",
          measured: `${median(now).toFixed(2)} (before: ${median(before).toFixed(2)}, middle half ${middleHalf(before)})`,
          met: median(now) >= 0.8,
        });
      }
    } finally {
      for (const server of running.values()) await server.stop();
    }
  } finally {
    for (const name of databases) {
      await adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((err: unknown) =>
        console.error(`Could not drop the bench database ${name}: ${String(err)}`),
      );
    }
  }
}
