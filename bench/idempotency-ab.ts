/**
 * An Idempotency-Key's cost on PostgreSQL, this checkout against others side by side
 * (issue 26): `npx tsx bench/idempotency-ab.ts <other checkout>[,<another>...] [rounds] [seconds]`.
 * `AB_STORE=nedb` runs the embedded store instead (each side in a data directory of its own;
 * the database figures are then 0).
 * Starts the compiled servers (each its dist/, each on a fresh database), one 1,000-card
 * tree each, and in every round runs plain and keyed card creations (wrk, 16 connections)
 * on every server, in an order that turns each round (ABBA over kinds and sides), so the
 * machine's drifting load falls on all alike. Prints each run, then the medians: req/s, the
 * server process's CPU a write and its database backends' (the connections open on its
 * database), keyed/plain ratios per side.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { queryOnce } from "./pg-once.js";
import { CardtreeClient } from "./cardtree-client.js";
import { generateTree } from "./generate.js";
import { cpuSeconds, startPinned } from "./processes.js";
import { runCardCreations } from "./wrk.js";

const others = (process.argv[2] ?? ".").split(",").map((each) => path.resolve(each));
const rounds = Number(process.argv[3] ?? 4);
const seconds = Number(process.argv[4] ?? 8);
const embedded = process.env.AB_STORE === "nedb";
const admin = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const query = (sql: string) => queryOnce(sql, admin);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const sides = [{ name: "this", root: path.resolve(".") }, ...others.map((root, i) => ({ name: others.length === 1 ? "other" : `other${i + 1}`, root }))].map(
  (side, i) => ({ ...side, database: `cardtree_ab_${process.pid}_${i}` }),
);
/** CPU seconds of each backend connected to `database` now (the server's pool), by pid. */
const backendSeconds = async (database: string): Promise<Map<number, number>> => {
  if (embedded) return new Map();
  const rows = await queryOnce<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", admin, [database]);
  const seconds = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      seconds.set(pid, cpuSeconds(pid));
    } catch {
      // That connection closed meanwhile.
    }
  }
  return seconds;
};
/** CPU the backends spent between two readings (a connection opened meanwhile counts whole; one closed is lost). */
const backendDelta = (before: Map<number, number>, after: Map<number, number>): number =>
  [...after].reduce((sum, [pid, seconds]) => sum + seconds - (before.get(pid) ?? 0), 0);
const dataDirs: Record<string, string> = {};
const servers: { name: string; database: string; server: Awaited<ReturnType<typeof startPinned>>; writer: CardtreeClient; tree: string; parent: string }[] = [];
try {
  for (const side of sides) {
    let env: Record<string, string>;
    if (embedded) {
      env = { DATA_DIR: (dataDirs[side.database] = mkdtempSync(path.join(os.tmpdir(), `${side.database}-`))) };
    } else {
      await query(`CREATE DATABASE ${side.database}`);
      const url = new URL(admin);
      url.pathname = `/${side.database}`;
      env = { STORE: "postgres", DATABASE_URL: url.toString() };
    }
    const server = await startPinned({
      command: () => [process.execPath, path.join(side.root, "dist/server.mjs")],
      cwd: side.root,
      env,
      logFile: path.join(os.tmpdir(), `${side.database}.log`),
      readyPath: "/healthz",
    });
    const writer = await CardtreeClient.signUp(server.url, `ab-${side.name}@bench.example`);
    const tree = await writer.treeWith("Idempotency", generateTree(1_000, 26));
    const cards = await writer.json<{ _id: string; parentId: string | null }[]>("GET", `/api/trees/${tree}/cards`);
    servers.push({ name: side.name, database: side.database, server, writer, tree, parent: cards.find((c) => c.parentId === null)!._id });
  }
  const figures: Record<string, { rps: number[]; cpu: number[]; db: number[] }> = {};
  for (let round = 0; round < rounds; round++) {
    const kinds = round % 2 === 0 ? ["plain", "keyed"] : ["keyed", "plain"];
    const order = round % 4 < 2 ? servers : [...servers].reverse();
    for (const kind of kinds) {
      for (const each of order) {
        const pid = each.server.process.pid!;
        const before = cpuSeconds(pid);
        const dbBefore = await backendSeconds(each.database);
        const result = await runCardCreations(each, kind === "keyed", seconds);
        const cpu = ((cpuSeconds(pid) - before) * 1000) / Math.max(1, result.requests);
        const db = (backendDelta(dbBefore, await backendSeconds(each.database)) * 1000) / Math.max(1, result.requests);
        const id = `${each.name} ${kind}`;
        figures[id] ??= { rps: [], cpu: [], db: [] };
        figures[id].rps.push(result.requestsPerSecond);
        figures[id].cpu.push(cpu);
        figures[id].db.push(db);
        console.log(`round ${round + 1}: ${id}: ${result.requestsPerSecond.toFixed(0)} req/s, server CPU ${cpu.toFixed(3)} ms a write, database ${db.toFixed(3)} ms, ${result.errors} errors (load ${os.loadavg()[0].toFixed(1)})`);
      }
    }
  }
  for (const side of sides) {
    const plain = figures[`${side.name} plain`];
    const keyed = figures[`${side.name} keyed`];
    console.log(
      `${side.name} (${side.root}): plain ${median(plain.rps).toFixed(0)} req/s, ${median(plain.cpu).toFixed(3)} + ${median(plain.db).toFixed(3)} ms; ` +
        `keyed ${median(keyed.rps).toFixed(0)} req/s, ${median(keyed.cpu).toFixed(3)} + ${median(keyed.db).toFixed(3)} ms; ` +
        `keyed/plain req/s ${(median(keyed.rps) / median(plain.rps)).toFixed(2)}, CPU plain/keyed: server ${(median(plain.cpu) / median(keyed.cpu)).toFixed(2)}, ` +
        (embedded ? "(embedded store: no database)" : `database ${(median(plain.db) / median(keyed.db)).toFixed(2)}`),
    );
  }
} finally {
  await Promise.all(servers.map((each) => each.server.stop()));
  for (const side of sides) {
    if (embedded) rmSync(dataDirs[side.database] ?? "/nonexistent", { recursive: true, force: true });
    else await query(`DROP DATABASE IF EXISTS ${side.database} WITH (FORCE)`).catch(() => undefined);
  }
}
