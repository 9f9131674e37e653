/**
 * The server's first read of a big tree's cards after it was written (issue 27): imports a
 * generated tree (as `npm run bench -- --browser` does), waits, then reads
 * `GET /api/trees/:id/cards` with a browser's Accept-Encoding twice, timing the first byte
 * and the whole answer, and the server process's CPU for each read (from /proc).
 *
 * `npx tsx bench/first-read.ts [cards] [waitMs]` against a server it starts from dist/
 * (npm run build first); `TRACE_SERVER=<other checkout>/dist/server.mjs` runs that build.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { CardtreeClient } from "./cardtree-client.js";
import { generateTree } from "./generate.js";
import { cpuSeconds } from "./processes.js";
import { startTestServer } from "../test/helpers/server.js";

const cards = Number(process.argv[2] ?? 100_000);
const waitMs = Number(process.argv[3] ?? 1500);

const server = await startTestServer({
  startTimeoutMs: 180_000,
  env: { LOG: "off" },
  args: [...(process.env.PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.PROFILE_DIR}`] : []), "--enable-source-maps", process.env.TRACE_SERVER ?? "dist/server.mjs"],
});
// As the bench runs it (bench/processes.ts startPinned): every thread of the server on one core.
spawnSync("taskset", ["-a", "-p", "-c", "0", String(server.process.pid)], { stdio: "ignore" });
/** The server process's CPU time so far, ms (user + system, all its threads). */
const cpu = () => cpuSeconds(server.process.pid!) * 1000;
try {
  const client = await CardtreeClient.signUp(server.url, `first-read-${Date.now()}@bench.example`);
  const treeId = await client.treeWith(`First read ${cards}`, generateTree(cards, 11));
  await new Promise((r) => setTimeout(r, waitMs));
  for (const label of ["first read", "second read"]) {
    const before = cpu();
    const started = performance.now();
    const { firstByte, bytes, encoding } = await get(server.url, `/api/trees/${treeId}/cards`, client);
    const total = performance.now() - started;
    await new Promise((r) => setTimeout(r, 100));
    console.log(`${label}: first byte ${firstByte.toFixed(0)} ms, whole ${total.toFixed(0)} ms, ${bytes} bytes ${encoding}; server CPU ${(cpu() - before).toFixed(0)} ms (load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")})`);
  }
} finally {
  if (process.env.DEBUG_OUT) console.log(server.output.filter((l) => l.includes('DEBUG')).join('\n'));
  await server.stop();
}

function get(base: string, path: string, client: CardtreeClient): Promise<{ firstByte: number; bytes: number; encoding: string }> {
  const url = new URL(path, base);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: client.authorization, "Accept-Encoding": "gzip, deflate, br, zstd", Accept: "application/json", "X-Requested-With": "XMLHttpRequest" } }, (res) => {
      const firstByte = performance.now() - started;
      let bytes = 0;
      res.on("data", (chunk: Buffer) => (bytes += chunk.length));
      res.on("end", () => resolve({ firstByte, bytes, encoding: String(res.headers["content-encoding"] ?? "identity") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}
