/**
 * A/B of the cached card-list read under wrk (issue 27): one or more Cardtree builds (cwd
 * directories holding dist/) side by side with bare node:http servers sending the same
 * bytes, alternated round after round; reports requests/s and the server's CPU time per
 * request (utime+stime from /proc, which the machine's load bends less than requests/s).
 *
 *   tsx bench/wire-ab.ts [--cards N] [--seconds S] [--rounds R] [--auth basic|cookie] [DIR...]
 *
 * With no DIR, this checkout. Each DIR must hold a built dist/server.mjs (a baseline:
 * `git archive REV | tar -x -C DIR`, node_modules linked, `node scripts/build.mjs`).
 * AB_ONLY=br skips the plain reads; AB_PROFILE=DIR runs the servers with --cpu-prof there;
 * AB_LOG_OFF=1 runs them with LOG=off; AB_STORE=postgres runs each on a database of its own
 * (made at DATABASE_URL's server, or 127.0.0.1:5432, and dropped at the end).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CardtreeClient } from "./cardtree-client.js";
import { generateTree } from "./generate.js";
import { cpuTimes, pinSelfToLoadCore, ROOT, startPinned, type Pinned } from "./processes.js";
import { runWrk } from "./wrk.js";
import { databaseUrl, queryOnce } from "./pg-once.js";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const at = args.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const [value] = args.splice(at, 2).slice(1);
  return value;
};
const cards = Number(option("cards", "20020"));
const seconds = Number(option("seconds", "5"));
const rounds = Number(option("rounds", "3"));
const authBy = option("auth", "basic");
if (authBy !== "basic" && authBy !== "cookie") throw new Error(`--auth ${authBy}: basic or cookie`);
const dirs = args.length > 0 ? args.map((dir) => path.resolve(dir)) : [ROOT];


/** Logs in as the browser does (POST /api/login) and returns the session cookie to send. */
async function sessionCookie(baseUrl: string, client: CardtreeClient): Promise<string> {
  const res = await fetch(`${baseUrl}/api/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email: client.email, password: client.password }),
  });
  const cookie = res.headers.getSetCookie()[0];
  if (res.status !== 200 || !cookie) throw new Error(`log-in failed: ${res.status} ${await res.text()}`);
  return cookie.split(";")[0];
}

async function main() {
  pinSelfToLoadCore();
  const workDir = mkdtempSync(path.join(os.tmpdir(), "cardtree-wire-ab-"));
  const seed = generateTree(cards, 11);
  const targets: { label: string; server: Pinned; url: string; headers: Record<string, string>; brHeaders: Record<string, string> }[] = [];
  let brBytes: Buffer | undefined;
  let plainBytes: Buffer | undefined;
  const databases: string[] = [];
  for (const [i, dir] of dirs.entries()) {
    const dataDir = path.join(workDir, `data-${i}`);
    mkdirSync(dataDir);
    const database = `cardtree_wire_ab_${process.pid}_${i}`;
    if (process.env.AB_STORE === "postgres") {
      await queryOnce(`CREATE DATABASE ${database}`);
      databases.push(database);
    }
    const store: Record<string, string> = process.env.AB_STORE === "postgres" ? { STORE: "postgres", DATABASE_URL: databaseUrl(database) } : {};
    const server = await startPinned({
      command: () => [process.execPath, ...(process.env.AB_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.AB_PROFILE}`] : []), "dist/server.mjs"],
      cwd: dir,
      env: { DATA_DIR: dataDir, MAX_CONNECTIONS_PER_ADDRESS: "0", ...store, ...(process.env.AB_LOG_OFF ? { LOG: "off" } : {}) },
      logFile: path.join(workDir, `server-${i}.log`),
      readyPath: "/healthz",
    });
    const client = await CardtreeClient.signUp(server.url, "ab@bench.example");
    const treeId = await client.treeWith("AB", seed);
    const url = `${server.url}/api/trees/${treeId}/cards`;
    // Basic credentials on every request (scripts, curl -u), or a log-in's session cookie (the browser).
    const auth: Record<string, string> = authBy === "basic" ? { Authorization: client.authorization } : { Cookie: await sessionCookie(server.url, client) };
    // Wait for the full brotli copy.
    for (let tries = 0; ; tries++) {
      const res = await fetch(url, { headers: { ...auth, "Accept-Encoding": "br" } });
      await res.arrayBuffer();
      if (res.headers.get("etag")?.endsWith('-br"')) break;
      if (tries > 600) throw new Error("no br copy");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (!brBytes) {
      // Node's fetch decodes; read the raw bytes with node:http.
      const http = await import("node:http");
      const raw = (headers: Record<string, string>) =>
        new Promise<Buffer>((resolve, reject) =>
          http.get(url, { headers: { ...auth, ...headers } }, (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => resolve(Buffer.concat(chunks)));
            res.on("error", reject);
          }),
        );
      brBytes = await raw({ "Accept-Encoding": "br" });
      plainBytes = await raw({});
    }
    targets.push({ label: `cardtree ${path.basename(dir)}#${i}`, server, url, headers: auth, brHeaders: { ...auth, "Accept-Encoding": "br" } });
  }
  writeFileSync(path.join(workDir, "cards.br"), brBytes!);
  writeFileSync(path.join(workDir, "cards.json"), plainBytes!);
  const rawBr = await startPinned({ command: () => [process.execPath, "bench/raw-server.mjs", path.join(workDir, "cards.br"), "br"], logFile: path.join(workDir, "raw.log"), readyPath: "/healthz" });
  const rawPlain = await startPinned({ command: () => [process.execPath, "bench/raw-server.mjs", path.join(workDir, "cards.json")], logFile: path.join(workDir, "raw.log"), readyPath: "/healthz" });
  console.log(`br ${brBytes!.length} bytes, plain ${plainBytes!.length} bytes; load ${os.loadavg().map((n) => n.toFixed(1)).join(" ")}`);
  // CPU time per request, and its user part (the process's own code: JavaScript, GC, node's
  // internals); the rest is the kernel's (the socket's copy, mostly), which the machine's load
  // bends most.
  const rows: Record<string, { rps: number[]; cpuUs: number[]; userUs: number[] }> = {};
  const run = async (label: string, pid: number, url: string, headers: Record<string, string>) => {
    const before = cpuTimes(pid);
    const result = await runWrk({ url, headers, seconds, connections: 8 });
    const after = cpuTimes(pid);
    const perRequest = (seconds: number) => (seconds * 1e6) / result.requests;
    const cpu = perRequest(after.user + after.system - before.user - before.system);
    const user = perRequest(after.user - before.user);
    const row = (rows[label] ??= { rps: [], cpuUs: [], userUs: [] });
    row.rps.push(result.requestsPerSecond);
    row.cpuUs.push(cpu);
    row.userUs.push(user);
    console.log(
      `${label.padEnd(28)} ${result.requestsPerSecond.toFixed(0).padStart(6)} req/s  ${cpu.toFixed(0).padStart(5)} µs CPU/req (user ${user.toFixed(0)})  errors ${result.errors}  load ${os.loadavg()[0].toFixed(1)}`,
    );
  };
  for (let round = 0; round < rounds; round++) {
    await run("raw br", rawBr.process.pid!, `${rawBr.url}/cards`, { "Accept-Encoding": "br" });
    for (const t of targets) await run(`${t.label} br`, t.server.process.pid!, t.url, t.brHeaders);
    if (process.env.AB_ONLY === "br") continue;
    await run("raw plain", rawPlain.process.pid!, `${rawPlain.url}/cards`, {});
    for (const t of targets) await run(`${t.label} plain`, t.server.process.pid!, t.url, t.headers);
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`\nmedians (load ${os.loadavg().map((n) => n.toFixed(1)).join(" ")}):`);
  for (const [label, row] of Object.entries(rows)) {
    console.log(`${label.padEnd(28)} ${med(row.rps).toFixed(0).padStart(6)} req/s  ${med(row.cpuUs).toFixed(0).padStart(5)} µs CPU/req (user ${med(row.userUs).toFixed(0)})`);
  }
  await rawBr.stop();
  await rawPlain.stop();
  for (const t of targets) await t.server.stop();
  for (const database of databases) await queryOnce(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  rmSync(workDir, { recursive: true, force: true });
}

await main();
