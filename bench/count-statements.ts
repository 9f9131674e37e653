/**
 * Statements a card creation sends to PostgreSQL, plain and with an Idempotency-Key
 * (issue 26): `npx tsx bench/count-statements.ts [checkout] [writes] [lanes]`. Runs the
 * compiled server of this checkout (or of the one given: its dist/) on a fresh database
 * whose `log_min_duration_statement` is 0, makes `writes` creations of each kind in `lanes` parallel
 * lanes (1: one after the other, nothing batches), and counts, per creation, that
 * database's statements in PostgreSQL's log (/var/log/postgresql/postgresql-15-main.log,
 * or PG_LOG) between markers, those that write, its committed transactions
 * (pg_stat_database), the time PostgreSQL took for the group commit's statements (a batch's or a lone change's), and the
 * server process's CPU. Figures that the machine's load moves
 * little, unlike req/s.
 */
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { queryOnce } from "./pg-once.js";
import { CardtreeClient } from "./cardtree-client.js";
import { cpuSeconds, startPinned } from "./processes.js";

const root = path.resolve(process.argv[2] ?? ".");
const writes = Number(process.argv[3] ?? 50);
const lanes = Number(process.argv[4] ?? 1);
const commits = async (): Promise<number> => {
  // The statistics collector reports with a delay: let it catch up first. A fresh
  // connection has no statistics snapshot of its own to clear.
  await new Promise((resolve) => setTimeout(resolve, 1_200));
  const rows = await queryOnce<{ n: string }>("SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1", admin, [database]);
  return Number(rows[0].n);
};
const logPath = process.env.PG_LOG ?? "/var/log/postgresql/postgresql-15-main.log";
const admin = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const database = `cardtree_count_${process.pid}`;
const query = (url: string, sql: string) => queryOnce(sql, url);
await query(admin, `CREATE DATABASE ${database}`);
// Each statement logged once, with how long PostgreSQL took to run it.
await query(admin, `ALTER DATABASE ${database} SET log_min_duration_statement = 0`);
const url = new URL(admin);
url.pathname = `/${database}`;
const server = await startPinned({
  command: () => [process.execPath, path.join(root, "dist/server.mjs")],
  cwd: root,
  env: { STORE: "postgres", DATABASE_URL: url.toString() },
  logFile: path.join(os.tmpdir(), `${database}.log`),
  readyPath: "/healthz",
});
try {
  const writer = await CardtreeClient.signUp(server.url, `count-${process.pid}@bench.example`);
  const tree = await writer.json<{ _id: string }>("POST", "/api/trees", { name: "Counted" });
  const mark = (label: string) => query(url.toString(), `SELECT 'cardtree-count-${label}'`);
  const counts: Record<string, Record<string, number>> = {};
  const pid = server.process.pid!;
  for (const kind of ["plain", "keyed", "replayed"] as const) {
    const commitsBefore = await commits();
    const cpuBefore = cpuSeconds(pid);
    await mark(`${kind}-start`);
    let next = 0;
    const lane = async () => {
      for (let i = next++; i < writes; i = next++) {
        const headers: Record<string, string> = kind === "plain" ? {} : { "Idempotency-Key": `count-${kind === "replayed" ? "r" : "k"}-${i}` };
        const body = { treeId: tree._id, position: i, content: `${kind} ${i}` };
        if (kind === "replayed") await (await writer.request("POST", `/api/trees/${tree._id}/cards`, body, headers)).arrayBuffer();
        const res = await writer.request("POST", `/api/trees/${tree._id}/cards`, body, headers);
        if (res.status !== 201) throw new Error(`${kind} ${i}: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: lanes }, lane));
    // The answers kept lazily go within 20 ms: let them land before the marker.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const cpu = cpuSeconds(pid) - cpuBefore;
    await mark(`${kind}-end`);
    const committed = (await commits()) - commitsBefore - 2;
    const log = readFileSync(logPath, "utf8").split("\n").filter((line) => line.includes(`@${database} `));
    const start = log.findIndex((line) => line.includes(`cardtree-count-${kind}-start`));
    const end = log.findIndex((line) => line.includes(`cardtree-count-${kind}-end`));
    const statements = log.slice(start + 1, end).filter((line) => / LOG: {2}duration: [0-9.]+ ms {2}(statement|execute [^:]*):/.test(line));
    const commitMs = statements
      .filter((line) => /execute cardtree-(group|lone|next-plain|next-keyed)-commit/.test(line))
      .reduce((sum, line) => sum + Number(/duration: ([0-9.]+) ms/.exec(line)![1]), 0);
    const answersMs = statements
      .filter((line) => line.includes("execute idempotency-answers"))
      .reduce((sum, line) => sum + Number(/duration: ([0-9.]+) ms/.exec(line)![1]), 0);
    const writing = statements.filter((line) => /cardtree-(group|lone|next-plain|next-keyed)-commit|idempotency-|INSERT|UPDATE|DELETE/.test(line));
    if (process.env.SHOW) console.log(statements.slice(0, 12).join("\n"));
    const per = kind === "replayed" ? writes * 2 : writes;
    const round = (n: number) => Math.round(n * 100) / 100;
    counts[kind] = {
      statements: round(statements.length / per),
      writing: round(writing.length / per),
      commits: round(committed / per),
      cpuMs: round((cpu * 1000) / per),
      groupCommitMs: round(commitMs / per),
      answersMs: round(answersMs / per),
    };
  }
  console.log(`${root}: per card creation, ${writes} writes in ${lanes} lane(s) (replayed: per request, the first and its replay; load ${os.loadavg()[0].toFixed(1)}):`);
  for (const [kind, figures] of Object.entries(counts)) console.log(`  ${kind}: ${JSON.stringify(figures)}`);
} finally {
  await server.stop();
  await query(admin, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
}
