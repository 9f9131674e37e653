/**
 * What the database spends on one card create's commit (issue 27):
 * `npx tsx bench/commit-cpu.ts [<other checkout>] [commits] [pairs]`.
 *
 * For each checkout (this one, and the other given), makes a fresh database on the
 * PostgreSQL at DATABASE_URL (or postgres@127.0.0.1:5432), and hands that checkout's
 * GroupCommit (src/store/postgres/group-commit.ts) `commits` card creates on one tree, one
 * after the other (each a lone change carrying its writer's user guard, as a busy tree's
 * writes do), through a pool of one connection. Then it reads the CPU that connection's backend
 * used from /proc. The sides take turns, `pairs` times. It prints each window, then each
 * side's median: the backend's CPU a commit (what the machine's load moves little) and the
 * wall time a commit (what it moves a lot). The database must run on this machine.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { queryOnce } from "./pg-once.js";
import { cpuSeconds } from "./processes.js";
import type { Change } from "../src/shared/changes.js";
import type { StoredCard, Tree } from "../src/shared/records.js";

type GroupCommitModule = typeof import("../src/store/postgres/group-commit.js");
type MigrateModule = typeof import("../src/store/postgres/migrate.js");

const other = process.argv[2] ? path.resolve(process.argv[2]) : null;
const commits = Number(process.argv[3] ?? 3000);
const pairs = Number(process.argv[4] ?? 5);
const admin = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const adminQuery = (sql: string) => queryOnce(sql, admin);

/** One window: `commits` creates through `root`'s group commit on a fresh database. */
async function window(root: string, n: number): Promise<{ cpuMs: number; wallMs: number }> {
  const { GroupCommit } = (await import(path.join(root, "src/store/postgres/group-commit.ts"))) as GroupCommitModule;
  const { migrate } = (await import(path.join(root, "src/store/postgres/migrate.ts"))) as MigrateModule;
  const database = `cardtree_commit_cpu_${process.pid}_${n}`;
  await adminQuery(`CREATE DATABASE ${database}`);
  const url = new URL(admin);
  url.pathname = `/${database}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 1 });
  try {
    await migrate(pool);
    const userRecord = JSON.stringify({ _id: "u1", email: "u1@example.com", name: "Writer" });
    await pool.query("INSERT INTO users (id, email, created_at, record) VALUES ('u1', 'u1@example.com', '2026-11-27', $1)", [userRecord]);
    const now = new Date().toISOString();
    const tree: Tree = { __v: 0, _id: "t1", createdAt: now, updatedAt: now, name: "Tree", owner: "u1", users: ["u1"], revision: 1 };
    await pool.query("INSERT INTO trees (id, users, revision, record) VALUES ('t1', '{u1}', 1, $1)", [JSON.stringify(tree)]);
    const group = new GroupCommit({
      pool,
      origin: "commit-cpu",
      cardRecord: ({ trashed: _trashed, ...rest }) => JSON.stringify(rest),
      commitOne: () => Promise.reject(new Error("a commit was refused")),
    });
    const [{ pid }] = (await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows;
    const cpu = () => cpuSeconds(pid) * 1000;
    let revision = 1;
    const create = async () => {
      revision++;
      const at = new Date().toISOString();
      const card: StoredCard = { _id: `c${revision}`, treeId: "t1", parentId: null, position: revision, content: `## Bench card ${revision}\n\nWritten by the counter.`, createdAt: at, updatedAt: at, __v: 0 };
      const change: Change = { treeId: "t1", revision, at, userId: "u1", kind: "card.create", before: [], after: [card] };
      await group.commit(change, { ...tree, revision, updatedAt: at }, undefined, [{ userId: "u1", record: userRecord }]);
    };
    for (let i = 0; i < 300; i++) await create();
    const cpuBefore = cpu();
    const started = performance.now();
    for (let i = 0; i < commits; i++) await create();
    return { cpuMs: (cpu() - cpuBefore) / commits, wallMs: (performance.now() - started) / commits };
  } finally {
    await pool.end();
    await adminQuery(`DROP DATABASE ${database}`);
  }
}

const sides = [{ name: "this", root: path.resolve(".") }, ...(other ? [{ name: "other", root: other }] : [])];
const results = new Map(sides.map((side) => [side.name, { cpu: [] as number[], wall: [] as number[] }]));
let n = 0;
for (let pair = 0; pair < pairs; pair++) {
  for (const side of pair % 2 === 0 ? sides : [...sides].reverse()) {
    const load = readFileSync("/proc/loadavg", "utf8").split(" ")[0];
    const { cpuMs, wallMs } = await window(side.root, n++);
    results.get(side.name)!.cpu.push(cpuMs);
    results.get(side.name)!.wall.push(wallMs);
    console.log(`${side.name}: backend CPU ${cpuMs.toFixed(3)} ms a commit, wall ${wallMs.toFixed(3)} ms (load ${load})`);
  }
}
for (const side of sides) {
  const { cpu, wall } = results.get(side.name)!;
  console.log(`${side.name} (${side.root}): median backend CPU ${median(cpu).toFixed(3)} ms a commit, wall ${median(wall).toFixed(3)} ms`);
}
