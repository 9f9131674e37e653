/**
 * Offline writing (issue 26), three figures:
 * - 1,000 changes queued offline on a 5,000-card tree, sent after reconnecting: the client's
 *   own save queue and outbox (src/web/model/sync.ts, run in Node by test/offline/sim-client.ts)
 *   against the real server, each change one request with its idempotency key. From the
 *   moment the network is back to the last answer. (Target: within 5 s.)
 * - A 5,000-card tree opened offline in Chromium: a persistent profile opens the tree online
 *   once (the service worker and the tree's copy in IndexedDB), then the network is cut and
 *   the page reloaded; from the reload to the cards drawn. (Target: within 1 s.)
 * - The "nothing lost" simulation, big: 8 browsers, 1,500 operations and faults, on the
 *   embedded store and, when a PostgreSQL is at hand, on two processes sharing it.
 *
 * `npx tsx bench/scenarios/offline.ts` runs it alone against servers it starts from the
 * sources; `npm run bench -- --offline` from the compiled server.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { startTestServer, type TestServer } from "../../test/helpers/server.js";
import { SimDevice, SimTab } from "../../test/offline/sim-client.js";
import { runSimulation, type SimulationReport } from "../../test/offline/simulation.js";
import { CardtreeClient } from "../cardtree-client.js";
import { databaseUrl, queryOnce } from "../pg-once.js";
import { cpuSeconds } from "../processes.js";
import { generateTree } from "../generate.js";
import { spread, type Report } from "../report.js";

const CHROMIUM = "/usr/bin/chromium";

export interface OfflineOptions {
  report: Report;
  /** The server measured (compiled, pinned) for the first two figures. */
  baseUrl: string;
  /** How the simulation starts its own servers (they are killed and restarted). */
  serverArgs?: string[];
  quick?: boolean;
  /** Leave out the simulation (the two timings alone). */
  noSimulation?: boolean;
  /** The measured server's process, whose CPU over the sync is noted (bench/run.ts's pinned server). */
  serverPid?: number;
}

export async function offlineScenarios(options: OfflineOptions): Promise<void> {
  const { report, baseUrl } = options;
  const stamp = Date.now();
  const writer = await CardtreeClient.signUp(baseUrl, `offline-${stamp}@bench.example`);
  const treeId = await writer.treeWith("Offline bench", generateTree(5_000, 26));

  // 1. 1,000 changes made offline, then sent.
  let online = false;
  const tab = new SimTab(new SimDevice("bench"), treeId, writer.authorization, {
    server: () => baseUrl,
    online: () => online,
    dropAnswer: () => false,
  });
  online = true;
  await tab.open();
  online = false;
  const cards = tab.state.treeOrder().map((entry) => entry.card);
  const changes = 1_000;
  for (let i = 0; i < changes; i++) await tab.edit(cards[(i * 5) % cards.length], `offline${i}`);
  online = true;
  // CPU as well as wall time: which side a loaded machine's figure waited for.
  const serverCpu = options.serverPid ? cpuSeconds(options.serverPid) : null;
  const clientCpu = process.cpuUsage();
  const started = performance.now();
  tab.sync.retryNow();
  await tab.settle(Date.now() + 120_000);
  const syncMs = performance.now() - started;
  const client = process.cpuUsage(clientCpu);
  const clientMs = (client.user + client.system) / 1000;
  const serverMs = serverCpu === null || !options.serverPid ? null : (cpuSeconds(options.serverPid) - serverCpu) * 1000;
  report.add({
    id: "offline-1000-sync",
    scenario: "1,000 changes made offline on a 5,000-card tree, sent on reconnecting (client save queue, one request each)",
    ms: syncMs,
    requestsPerSecond: changes / (syncMs / 1000),
    note: `CPU: ${serverMs === null ? "" : `server ${serverMs.toFixed(0)} ms, `}client ${clientMs.toFixed(0)} ms`,
  });
  report.target({ name: "1,000 offline changes synced after reconnecting (5,000-card tree)", wanted: "<= 5 s", measured: `${(syncMs / 1000).toFixed(2)} s`, met: syncMs <= 5_000 });
  const after = await writer.json<{ content: string }[]>("GET", `/api/trees/${treeId}/cards`);
  const landed = after.filter((card) => /offline\d+/.test(card.content)).length;
  if (landed !== changes) report.note(`offline sync: ${landed} of ${changes} changes on the server`);

  // 2. The 5,000-card tree opened offline in Chromium.
  if (!existsSync(CHROMIUM)) report.note(`offline open skipped: ${CHROMIUM} not found`);
  else {
    const times = await openOffline(baseUrl, writer, treeId, options.quick ? 3 : 5);
    const { p50, max } = spread(times);
    report.add({ id: "offline-open-5k", scenario: "5,000-card tree opened offline in Chromium (reload to cards drawn)", ms: p50, note: `max ${max.toFixed(0)} ms over ${times.length}` });
    report.target({ name: "5,000-card tree opens offline", wanted: "<= 1 s", measured: `${p50.toFixed(0)} ms (p50), ${max.toFixed(0)} ms max`, met: p50 <= 1_000 });
  }

  // 3. The big simulation.
  if (options.noSimulation) return;
  const steps = options.quick ? 400 : 1_500;
  for (const store of ["nedb", "postgres"] as const) {
    const servers = await simulationServers(store, options.serverArgs);
    if (!servers) {
      report.note("simulation on PostgreSQL skipped: no PostgreSQL at DATABASE_URL or 127.0.0.1:5432");
      continue;
    }
    let result: SimulationReport | null = null;
    const began = performance.now();
    try {
      result = await runSimulation({ seed: 26_000 + steps, devices: 8, steps, servers: servers.list, killServerRate: 0.004 });
    } finally {
      await Promise.all((result?.servers ?? servers.list).map((server) => server.stop()));
      await servers.cleanup();
    }
    const label = store === "nedb" ? "embedded store, 1 process" : "PostgreSQL, 2 processes";
    report.add({
      id: `offline-simulation-${store}`,
      scenario: `nothing-lost simulation (${label}): ${result.accepted} changes accepted, ${result.offlineWindows} offline windows, ${result.droppedAnswers} answers dropped, ${result.tabKills} tabs and ${result.serverKills} servers killed`,
      ms: performance.now() - began,
      errors: result.problems.length,
      note: `${result.conflictsKept} conflicts kept visible, ${result.broughtBack} cards brought back (${result.duplicates} beside an original still there), ${result.createsPutBack} answered creates put back from the outbox, ${result.editsStoodIn} edits of cards the tree as opened lacked stood in, ${result.followers} cards followed a card brought back, settled ${(result.settleMs / 1000).toFixed(1)} s after the last fault healed`,
    });
    report.target({ name: `nothing lost (${label})`, wanted: "0 problems", measured: `${result.problems.length} problems`, met: result.problems.length === 0 });
    for (const problem of result.problems.slice(0, 5)) report.note(`simulation ${store} (seed ${result.seed}): ${problem}`);
  }
}

async function openOffline(baseUrl: string, writer: CardtreeClient, treeId: string, repetitions: number): Promise<number[]> {
  const profile = mkdtempSync(path.join(os.tmpdir(), "cardtree-offline-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    baseURL: baseUrl,
    viewport: { width: 1440, height: 900 },
    reducedMotion: "reduce",
  });
  try {
    const login = await context.request.post("/api/login", { data: { email: writer.email, password: writer.password } });
    if (login.status() !== 200) throw new Error(`log-in failed: ${login.status()}`);
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`/trees/${treeId}`);
    // Predicates as functions: the page's CSP forbids evaluating strings.
    await page.waitForFunction(() => (window as any).app?.get("cardId") != null, undefined, { timeout: 60_000 });
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, undefined, { timeout: 60_000 });
    // The copy is written after the tree opens; leaving the page writes it too.
    await page.waitForTimeout(2_000);
    await context.setOffline(true);
    const times: number[] = [];
    for (let i = 0; i < repetitions; i++) {
      const started = performance.now();
      await page.reload();
      await page.waitForFunction(() => (window as any).app?.get("cardId") != null && document.querySelectorAll(".columns .card").length > 0, undefined, {
        timeout: 60_000,
        polling: 10,
      });
      times.push(performance.now() - started);
    }
    return times;
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

/** One server on a fresh data directory, or two processes on a fresh PostgreSQL database. */
async function simulationServers(store: "nedb" | "postgres", args?: string[]): Promise<{ list: TestServer[]; cleanup: () => Promise<void> } | null> {
  if (store === "nedb") {
    const server = await startTestServer({ env: { STORE: "nedb" }, args });
    return { list: [server], cleanup: async () => rmSync(server.dataDir, { recursive: true, force: true }) };
  }
  const name = `cardtree_bench_offline_${Date.now()}`;
  const query = async (sql: string): Promise<void> => void (await queryOnce(sql));
  try {
    await query(`CREATE DATABASE ${name}`);
  } catch {
    return null;
  }
  const env = { STORE: "postgres", DATABASE_URL: databaseUrl(name) };
  const list = [await startTestServer({ env, args }), await startTestServer({ env, args })];
  return { list, cleanup: () => query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { Report } = await import("../report.js");
  const report = new Report({ offlineOnly: true });
  // The compiled server, as `npm start` runs it (built first by `npm run build`).
  const server = await startTestServer({ env: { STORE: "nedb" }, args: ["dist/server.mjs"] });
  try {
    await offlineScenarios({ report, baseUrl: server.url, quick: process.argv.includes("--quick"), noSimulation: process.argv.includes("--no-simulation"), serverArgs: ["dist/server.mjs"] });
  } finally {
    await server.stop();
  }
  report.print();
  process.exit(0);
}
