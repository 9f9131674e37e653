/**
 * A campaign of big "nothing lost" simulations (issue 26): the bench's simulation (8 browsers,
 * 1,500 operations and faults) over a range of seeds, one line per seed, on the embedded store
 * or on two processes sharing a PostgreSQL database. Every run is traced in memory
 * (SIM_TRACE's lines); the trace of a run with problems, and only of such a run, is written to
 * `--traces` (default /tmp/cardtree-sim-traces) as `<store>-<seed>.log`, so a loss found is a
 * loss explained.
 *
 *   npm run build
 *   npx tsx bench/sim-campaign.ts --store nedb --from 28000 --count 50
 *   npx tsx bench/sim-campaign.ts --store postgres --from 28000 --count 20
 *
 * Servers are the compiled ones (dist/server.mjs), as `npm start` runs them, with a 5 s
 * idempotency lease as the test suite's simulation uses (a killed server's keys free sooner).
 * PostgreSQL: DATABASE_URL's server when set, else 127.0.0.1:5432 (bench/pg-once.ts).
 * Ends with a summary line; exits 1 when any run had a problem.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { startTestServer, type TestServer } from "../test/helpers/server.js";
import { runSimulation, type SimulationReport } from "../test/offline/simulation.js";
import { databaseUrl, queryOnce } from "./pg-once.js";

const { values } = parseArgs({
  options: {
    store: { type: "string", default: "nedb" },
    from: { type: "string", default: "28000" },
    count: { type: "string", default: "10" },
    steps: { type: "string", default: "1500" },
    devices: { type: "string", default: "8" },
    traces: { type: "string", default: "/tmp/cardtree-sim-traces" },
  },
});
const store = values.store === "postgres" ? "postgres" : values.store === "nedb" ? "nedb" : null;
if (!store) throw new Error(`--store is nedb or postgres, not ${values.store}`);
const [from, count, steps, devices] = [values.from, values.count, values.steps, values.devices].map((value) => {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new Error(`not a whole number: ${value}`);
  return number;
});
mkdirSync(values.traces, { recursive: true });

const SERVER = { args: ["dist/server.mjs"], env: { IDEMPOTENCY_LEASE_MS: "5000" } };

async function servers(): Promise<{ list: TestServer[]; cleanup: () => Promise<void> }> {
  if (store === "nedb") {
    const server = await startTestServer({ ...SERVER, env: { ...SERVER.env, STORE: "nedb" } });
    return { list: [server], cleanup: async () => rmSync(server.dataDir, { recursive: true, force: true }) };
  }
  const name = `cardtree_campaign_${process.pid}_${Date.now()}`;
  await queryOnce(`CREATE DATABASE ${name}`);
  const env = { ...SERVER.env, STORE: "postgres", DATABASE_URL: databaseUrl(name) };
  const list = [await startTestServer({ ...SERVER, env }), await startTestServer({ ...SERVER, env })];
  return {
    list,
    cleanup: async () => {
      for (const server of list) rmSync(server.dataDir, { recursive: true, force: true });
      await queryOnce(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

// The simulation traces through console.error when SIM_TRACE is set: keep the current run's
// lines, not the terminal's.
process.env.SIM_TRACE = "1";
let trace: string[] = [];
console.error = (...parts: unknown[]) => void trace.push(parts.map(String).join(" "));

const totals = { runs: 0, failed: 0, problems: 0, followers: 0, broughtBack: 0, duplicates: 0, conflictsKept: 0 };
const began = Date.now();
for (let seed = from; seed < from + count; seed++) {
  trace = [];
  const started = Date.now();
  const set = await servers();
  let report: SimulationReport | null = null;
  let crash: unknown = null;
  try {
    report = await runSimulation({ seed, devices, steps, servers: set.list, killServerRate: 0.004 });
  } catch (error) {
    crash = error;
  } finally {
    await Promise.all((report?.servers ?? set.list).map((server) => server.stop()));
    await set.cleanup();
  }
  const problems = crash ? [`the run threw: ${crash instanceof Error ? crash.stack : String(crash)}`] : report!.problems;
  totals.runs++;
  totals.problems += problems.length;
  if (report) {
    totals.followers += report.followers;
    totals.broughtBack += report.broughtBack;
    totals.duplicates += report.duplicates;
    totals.conflictsKept += report.conflictsKept;
  }
  let kept = "";
  if (problems.length > 0) {
    totals.failed++;
    const file = path.join(values.traces, `${store}-${seed}.log`);
    writeFileSync(file, [...problems.map((problem) => `PROBLEM ${problem}`), ...trace].join("\n") + "\n");
    kept = ` trace ${file}`;
  }
  const figures = report
    ? `accepted ${report.accepted}, offline ${report.offlineWindows}, dropped ${report.droppedAnswers}, tab kills ${report.tabKills}, server kills ${report.serverKills}, brought back ${report.broughtBack} (duplicates ${report.duplicates}), followers ${report.followers}, conflicts kept ${report.conflictsKept}`
    : "no report";
  process.stdout.write(`${store} seed ${seed}: ${problems.length} problems; ${figures}; ${((Date.now() - started) / 1000).toFixed(0)} s${kept}\n`);
  for (const problem of problems.slice(0, 3)) process.stdout.write(`  ${problem.split("\n")[0]}\n`);
}
process.stdout.write(
  `${store}, seeds ${from}–${from + count - 1}: ${totals.problems} problems in ${totals.failed} of ${totals.runs} runs; ` +
    `${totals.broughtBack} brought back (${totals.duplicates} duplicates), ${totals.followers} followers, ${totals.conflictsKept} conflicts kept; ` +
    `${((Date.now() - began) / 60_000).toFixed(1)} min\n`,
);
process.exit(totals.failed > 0 ? 1 : 0);
