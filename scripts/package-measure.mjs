/**
 * `npm run package:measure`: what the single binary costs, for docs/performance.md. Builds
 * dist/cardtree when it is missing, then prints its size and, as the median of `--runs N`
 * (default 5) runs each, the time from spawn until `/healthz` answers and the resident memory
 * then, for the binary and for `node dist/server.mjs` (what `npm start` runs), on an empty
 * data directory; then the binary's first GraphQL request and first docx export (the parts
 * it loads on first use).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BINARY, packageBinary } from "./package.mjs";
import { build, SERVER_ENTRY } from "./build.mjs";

const { values } = parseArgs({ options: { runs: { type: "string", default: "5" } } });
const runs = Number(values.runs);

async function rssOf(pid) {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) * 1024;
}

/** Spawns, waits for /healthz, measures, optionally runs `then(url)`, stops. */
async function startOnce(command, args, then) {
  const dataDir = await mkdtemp(join(os.tmpdir(), "cardtree-measure-"));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const started = performance.now();
  const child = spawn(command, args, { env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir, LOG: "off" }, stdio: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; ; i++) {
      if (i > 600) throw new Error(`${command} did not start`);
      const ok = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
      if (ok) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const ms = performance.now() - started;
    const rss = await rssOf(child.pid);
    return { ms, rss, ...(then ? await then(url) : {}) };
  } finally {
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function firstUses(url) {
  const ada = { email: "ada@example.com", password: "a long password" };
  await fetch(`${url}/api/signup`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ada) });
  const auth = { authorization: `Basic ${Buffer.from(`${ada.email}:${ada.password}`).toString("base64")}` };
  const tree = await (await fetch(`${url}/api/trees`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ name: "T", seed: "# A\n\nText\n\n## B" }) })).json();
  let t = performance.now();
  await (await fetch(`${url}/graphql`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ query: "{ me { email } }" }) })).text();
  const graphqlMs = performance.now() - t;
  t = performance.now();
  await (await fetch(`${url}/api/export/${tree._id}.docx`, { headers: auth })).arrayBuffer();
  const docxMs = performance.now() - t;
  return { graphqlMs, docxMs };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mb = (n) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

if (!existsSync(BINARY)) await packageBinary();
if (!existsSync(SERVER_ENTRY)) await build();
const size = (await stat(BINARY)).size;
const node = (await stat(process.execPath)).size;
console.log(`dist/cardtree: ${mb(size)} (node ${process.version} itself: ${mb(node)}; the rest: ${mb(size - node)})`);

for (const [label, command, args, then] of [
  ["dist/cardtree serve", BINARY, ["serve"], firstUses],
  ["node dist/server.mjs", process.execPath, [SERVER_ENTRY], firstUses],
]) {
  const results = [];
  // Alternating would be fairer under load; one warm-up run fills the page cache first.
  await startOnce(command, args);
  for (let i = 0; i < runs; i++) results.push(await startOnce(command, args, then));
  console.log(
    `${label}: start ${median(results.map((r) => r.ms)).toFixed(0)} ms, RSS ${mb(median(results.map((r) => r.rss)))}, ` +
      `first GraphQL ${median(results.map((r) => r.graphqlMs)).toFixed(0)} ms, first docx ${median(results.map((r) => r.docxMs)).toFixed(0)} ms (median of ${runs})`,
  );
}
