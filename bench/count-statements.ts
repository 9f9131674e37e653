/**
 * Statements a card creation sends to PostgreSQL, plain and with an Idempotency-Key
 * (issue 26): `npx tsx bench/count-statements.ts [dist directory] [writes]`. Runs the
 * compiled server of this checkout (or of the directory given) on a fresh database whose
 * `log_statement` is `all`, makes `writes` creations of each kind one after the other
 * (no batching), and counts that database's statements in PostgreSQL's log
 * (/var/log/postgresql/postgresql-15-main.log, or PG_LOG) between markers.
 */
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { CardtreeClient } from "./cardtree-client.js";
import { startPinned } from "./processes.js";

const root = path.resolve(process.argv[2] ?? ".");
const writes = Number(process.argv[3] ?? 50);
const logPath = process.env.PG_LOG ?? "/var/log/postgresql/postgresql-15-main.log";
const admin = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const database = `cardtree_count_${process.pid}`;
const query = async (url: string, sql: string) => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
};
await query(admin, `CREATE DATABASE ${database}`);
await query(admin, `ALTER DATABASE ${database} SET log_statement = 'all'`);
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
  const counts: Record<string, number> = {};
  for (const kind of ["plain", "keyed", "replayed"] as const) {
    await mark(`${kind}-start`);
    for (let i = 0; i < writes; i++) {
      const headers: Record<string, string> = kind === "plain" ? {} : { "Idempotency-Key": `count-${kind === "replayed" ? "r" : "k"}-${i}` };
      const body = { treeId: tree._id, position: i, content: `${kind} ${i}` };
      if (kind === "replayed") await writer.request("POST", `/api/trees/${tree._id}/cards`, body, headers);
      const res = await writer.request("POST", `/api/trees/${tree._id}/cards`, body, headers);
      if (res.status !== 201) throw new Error(`${kind} ${i}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }
    // The answers kept lazily go within 20 ms: let them land before the marker.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await mark(`${kind}-end`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const log = readFileSync(logPath, "utf8").split("\n").filter((line) => line.includes(`@${database} `));
    const start = log.findIndex((line) => line.includes(`cardtree-count-${kind}-start`));
    const end = log.findIndex((line) => line.includes(`cardtree-count-${kind}-end`));
    const statements = log.slice(start + 1, end).filter((line) => / LOG: {2}(statement|execute [^:]*):/.test(line));
    counts[kind] = statements.length / (kind === "replayed" ? writes * 2 : writes);
    if (process.env.SHOW) console.log(statements.slice(0, 12).join("\n"));
  }
  console.log(`${root}: statements per card creation over ${writes} sequential writes: ${JSON.stringify(counts)} (replayed: per request, the first and its replay)`);
} finally {
  await server.stop();
  await query(admin, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
}
