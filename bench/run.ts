/**
 * `npm run bench` (issue 8): builds realistic trees through the real API, then measures
 * the server over loopback with wrk, the server pinned to core 0 and the load to core 1,
 * and prints figures (not a test: nothing here passes or fails). The server measured is
 * the compiled one `npm start` runs (dist/server.mjs, built first). `--quick` runs each
 * load for 1 s, once, exports to impress and runs pandoc to pptx on a 100 KB sample, skips
 * the 10 MB import and starts with 100,000 cards only by `npm start`: about a minute.
 * `--profile` runs the main server from the sources under tsx with node --cpu-prof (so the
 * profile names src/ files) and prints its hottest functions. Both flags may also be given
 * to npm (`npm run bench --quick`), which passes them on as npm_config_quick and _profile.
 * `--hostile` runs only the hostile-traffic scenario (an honest writer's latency while one
 * client sends each attack of issue 12 in turn). `--live` stops after the reads and the
 * live streams (SSE fan-out and idle memory, issue 14). `--live-browser` runs only the time
 * from a write in one browser context to its appearance in another's page (issue 15).
 * `--scale` runs only the PostgreSQL scale scenario (issue 17: PostgreSQL against the
 * embedded store, two processes against one, a store of 1,000,000 cards); it needs a
 * PostgreSQL (DATABASE_URL, or 127.0.0.1:5432).
 * `--outlines` runs only OPML and Gingko Writer files against Markdown: imports and exports of
 * a 20,000-card tree, side by side (issue 29).
 * `--writes` runs only the card writes (10 s each, even with --quick), for the change log's
 * cost against the first wave's figures.
 * `--durability` runs only issue 32's figures: card writes of today's code (BENCH_BASELINE,
 * default main), SYNC=on and SYNC=off side by side, start-up with 100,000 cards, and
 * thousands of power cuts on the simulated disk (results-durability.json).
 * `--wire` runs only the compression scenario (issue 27: a 20,020-card list on the wire, the
 * first compressed read of a revision, compressed and plain reads against a raw server).
 * `--many-readers` runs only 10,000 SSE streams on one process (issue 27: one write's fan-out
 * and the memory they hold), on a server of its own with the stream limits raised.
 * `--pg-writes` runs only card writes on PostgreSQL against the embedded store with SYNC=on
 * and against BENCH_BASELINE's (default main) PostgreSQL store (issue 27: group commit), the
 * three servers taking short windows in turn (bench/scenarios/pg-writes.ts); it
 * needs a PostgreSQL (DATABASE_URL, or 127.0.0.1:5432).
 * `--lighthouse` runs only Lighthouse 12.2.3 (mobile preset, Debian's Chromium) on a 300-card
 * tree page and the log-in page, side by side with the client of BENCH_BASELINE (default
 * main), three runs a page and side (one with --quick); issue 27. Each run prints Lighthouse's
 * benchmarkIndex of this host; BENCH_LIGHTHOUSE_CPU=<n> runs with an n-times CPU slowdown
 * instead of the preset's 4x (Lighthouse's calibration for a slower host), judging no target.
 * `--browser` runs only the browser client's figures (open, keys, the active card whole in
 * view with motion allowed) on 5,000 and 100,000 cards (5,000 with --quick), for this checkout
 * and for BENCH_BASELINE's client (default main) side by side; issue 27.
 * `--startup` runs only start-up with 100,000 cards and the first GraphQL request (issue 27).
 * `--offline` runs only the offline figures (issue 26: 1,000 changes queued offline sent on
 * reconnecting, a 5,000-card tree opened offline in Chromium, the big nothing-lost simulation).
 * `--presence` runs only issue 30's figure: a card write's cost with 0 and with 200 presence
 * watchers, side by side.
 * `--no-simulation` with `--offline` leaves the big simulation out (the two timings alone).
 * `--idempotency` runs only what an Idempotency-Key costs a card write, on the embedded store
 * and on PostgreSQL one after the other in one run (issue 26; PostgreSQL at DATABASE_URL or
 * 127.0.0.1:5432), each on a 1,000-card tree, 16 connections, with and without keys in pairs of
 * short windows side by side (the median of the pairs' ratios; scenarios/writes.ts).
 * Results go to stdout and to bench/results.json.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CardtreeClient } from "./cardtree-client.js";
import { countCards, generateTree, maxDepth } from "./generate.js";
import { build } from "../scripts/build.mjs";
import { hasCommand, pinSelfToLoadCore, ROOT, startPinned } from "./processes.js";
import { summariseProfile } from "./profile-summary.js";
import { Report } from "./report.js";
import { fileScenarios } from "./scenarios/files.js";
import { liveScenarios } from "./scenarios/live.js";
import { outlineScenarios } from "./scenarios/outlines.js";
import { hostileScenarios } from "./scenarios/hostile.js";
import { readScenarios } from "./scenarios/reads.js";
import { fill, startupScenarios } from "./scenarios/startup.js";
import { idempotencyCost, pairedWindows, writeScenarios } from "./scenarios/writes.js";
import { durabilityScenarios } from "./scenarios/durability.js";
import { browserScenarios } from "./scenarios/browser.js";
import { liveBrowserScenarios } from "./scenarios/live-browser.js";
import { scaleScenarios } from "./scenarios/scale.js";
import { wireScenarios } from "./scenarios/wire.js";
import { offlineScenarios } from "./scenarios/offline.js";
import { presenceScenarios } from "./scenarios/presence.js";
import { pgWriteScenarios } from "./scenarios/pg-writes.js";
import { databaseUrl, queryOnce } from "./pg-once.js";
import { buildBaseline, lighthouseScenarios } from "./scenarios/lighthouse.js";

/** `npm run bench -- --quick`, or `npm run bench --quick`, where npm keeps the flag and sets npm_config_quick. */
function flag(name: string): boolean {
  return process.argv.includes(`--${name}`) || process.env[`npm_config_${name}`] === "true";
}

const quick = flag("quick");
/** `--hostile`: only the hostile-traffic scenario (issue 12). */
const hostileOnly = flag("hostile");
const profile = flag("profile");
/** `--live`: only the reads (after a write included) and the live streams (issue 14). */
const liveOnly = flag("live");
/** `--live-browser`: only a write's way to another writer's open page (issue 15). */
const liveBrowserOnly = flag("live-browser");
/** `--scale`: only the PostgreSQL scale scenario (issue 17). */
const scaleOnly = flag("scale");
/** `--writes`: only the card writes, at full length (issue 14: writes with the change log vs the first wave). */
const writesOnly = flag("writes");
/** `--durability`: only what fsync costs (today's code, SYNC=on, SYNC=off), start-up, and thousands of power cuts (issue 32). */
const durabilityOnly = flag("durability");
/** `--outlines`: only OPML and gkw against Markdown, imports and exports of 20,000 cards (issue 29). */
const outlinesOnly = flag("outlines");
/** `--many-readers`: only 10,000 SSE readers on one process (issue 27). */
const manyReadersOnly = flag("many-readers");
/** `--wire`: only compression on the wire (issue 27). */
const wireOnly = flag("wire");
/** `--pg-writes`: only PostgreSQL card writes against the embedded store's, SYNC=on (issue 27). */
const pgWritesOnly = flag("pg-writes");
/** `--startup`: only start-up with 100,000 cards and the first GraphQL request of a process (issue 27). */
const startupOnly = flag("startup");
/** `--offline`: only the offline figures (issue 26). */
const offlineOnly = flag("offline");
/** `--presence`: only a card write's cost with 0 and 200 presence watchers (issue 30). */
const presenceOnly = flag("presence");
/** `--idempotency`: only the cost of Idempotency-Key, both stores side by side (issue 26). */
const idempotencyOnly = flag("idempotency");
/** `--lighthouse`: only Lighthouse on the tree and log-in pages, against the anchor (issue 27). */
const lighthouseOnly = flag("lighthouse");
/** `--browser`: only the browser client in Chromium, against the anchor (issues 16 and 27). */
const browserOnly = flag("browser");
const settings = {
  quick,
  loadSeconds: quick ? 1 : 10,
  readConnections: 8,
  repetitions: quick ? 1 : 3,
  /** Compared load runs (REST, raw, json-server; with and without auth) alternate this often. */
  rounds: quick ? 1 : 3,
  startupCards: 100_000,
};

/** wrk and taskset are needed; pandoc only for the anchor. Installed when we may. */
function checkTools(): boolean {
  const missing = ["wrk", "pandoc"].filter((tool) => !hasCommand(tool));
  if (missing.length > 0 && process.getuid?.() === 0 && hasCommand("apt-get")) {
    console.log(`Installing ${missing.join(" and ")} with apt-get...`);
    // Stale package lists make the install fail; refresh them once and retry.
    if (spawnSync("apt-get", ["install", "-y", ...missing], { stdio: "inherit" }).status !== 0) {
      spawnSync("apt-get", ["update"], { stdio: "inherit" });
      spawnSync("apt-get", ["install", "-y", ...missing], { stdio: "inherit" });
    }
  }
  if (!hasCommand("taskset")) {
    console.error("taskset is missing (Debian package util-linux); it pins the server and the load to separate cores.");
    return false;
  }
  if (!hasCommand("wrk")) {
    console.error("wrk is missing: install it with `apt-get install -y wrk` (as root), then run `npm run bench` again.");
    return false;
  }
  if (!hasCommand("pandoc")) console.error("pandoc is missing (`apt-get install -y pandoc`): the export anchors will be skipped.");
  return true;
}

async function main(): Promise<void> {
  if (!checkTools()) process.exit(1);
  if (os.cpus().length < 2) console.error("Fewer than 2 cores: server and load share one, figures will be low.");
  if (!pinSelfToLoadCore()) console.error("Could not pin the runner to core 1.");
  const report = new Report(settings);
  const workDir = mkdtempSync(path.join(os.tmpdir(), "cardtree-bench-"));
  const profileDir = path.join(workDir, "profile");
  console.log(`Cardtree benchmarks${quick ? " (quick)" : ""}; working in ${workDir}`);

  // The servers below run dist/ as built now, whatever is edited in src/ meanwhile.
  await build();
  if (scaleOnly) {
    let failed = false;
    try {
      await scaleScenarios({
        report,
        workDir,
        seconds: settings.loadSeconds,
        rounds: settings.rounds,
        repetitions: quick ? 3 : 5,
        cards: 1_000_000,
      });
    } catch (err) {
      console.error(String(err));
      failed = true;
    }
    report.print();
    if (!failed) report.write(path.join(ROOT, "bench", "results.json"));
    rmSync(workDir, { recursive: true, force: true });
    if (failed) process.exit(1);
    return;
  }
  if (pgWritesOnly) {
    await pgWriteScenarios({ report, workDir, seconds: quick ? 3 : 10, rounds: quick ? 1 : 3 });
    report.print();
    report.write(path.join(ROOT, "bench", "results-pg-writes.json"));
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  if (durabilityOnly) {
    await durabilityScenarios({
      report,
      workDir,
      seconds: quick ? 3 : 10,
      rounds: quick ? 1 : 3,
      startupCards: settings.startupCards,
      startupRepetitions: quick ? 1 : 3,
      // BENCH_POWER_CUTS: fewer (or more) cuts, for a run on a shared machine.
      powerCuts: Number(process.env.BENCH_POWER_CUTS ?? (quick ? 300 : 2000)),
    });
    report.print();
    report.write(path.join(ROOT, "bench", "results-durability.json"));
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  if (lighthouseOnly) {
    console.log(`Lighthouse (load average ${os.loadavg().map((n) => n.toFixed(1)).join(", ")})...`);
    await lighthouseScenarios({ report, workDir, runs: quick ? 1 : 3 });
    report.note(`load average after: ${os.loadavg().map((n) => n.toFixed(1)).join(", ")}`);
    report.print();
    report.write(path.join(ROOT, "bench", "results-lighthouse.json"));
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  if (browserOnly) {
    const revision = process.env.BENCH_BASELINE ?? "main";
    console.log(`Building the anchor (${revision})...`);
    const sides = [
      { id: "before", label: `before (${revision})`, cwd: process.env.BENCH_BROWSER_SIDES === "now" ? ROOT : buildBaseline(workDir, revision, "browser-baseline") },
      { id: "now", label: "this checkout", cwd: ROOT },
    ];
    const sizes = (process.env.BENCH_BROWSER_SIZES ?? (quick ? "5000" : "5000,100000")).split(",").map(Number);
    // BENCH_BROWSER_SIDES=now (or before) runs one side alone.
    const only = process.env.BENCH_BROWSER_SIDES?.split(",");
    for (const side of sides.filter((s) => !only || only.includes(s.id))) {
      const dir = path.join(workDir, `browser-${side.id}`);
      mkdirSync(dir);
      const server = await startPinned({
        command: () => [process.execPath, "dist/server.mjs"],
        cwd: side.cwd,
        env: { DATA_DIR: dir, LOG: "off" },
        logFile: path.join(workDir, `browser-${side.id}.log`),
        readyPath: "/healthz",
        timeoutMs: 180_000,
      });
      console.log(`Browser client in Chromium, ${side.label} (load average ${os.loadavg().map((n) => n.toFixed(1)).join(", ")})...`);
      try {
        await browserScenarios({ report, baseUrl: server.url, sizes, label: side.id });
      } finally {
        await server.stop();
      }
    }
    report.note(`load average after: ${os.loadavg().map((n) => n.toFixed(1)).join(", ")}`);
    report.print();
    report.write(path.join(ROOT, "bench", "results-browser.json"));
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  if (hostileOnly) {
    console.log("Hostile traffic...");
    await hostileScenarios({ report, workDir, seconds: quick ? 2 : 6 });
    report.print();
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  const manyReaders = async () => {
    console.log("10,000 SSE readers on one process...");
    const dir = path.join(workDir, "many-readers");
    mkdirSync(dir);
    const many = await startPinned({
      command: () => [process.execPath, "dist/server.mjs"],
      // Every reader comes from the bench's one address: the per-address limits are lifted.
      env: { DATA_DIR: dir, LIVE_STREAMS_PER_USER: "10000", LIVE_STREAMS_PER_ADDRESS: "10000", LIVE_STREAMS_TOTAL: "10000", MAX_CONNECTIONS_PER_ADDRESS: "0" },
      logFile: path.join(workDir, "many-readers.log"),
      readyPath: "/healthz",
    });
    const follower = await CardtreeClient.signUp(many.url, "many@bench.example");
    const tree = await follower.treeWith("Many readers", generateTree(100, 9));
    await liveScenarios({
      report,
      server: many,
      writer: follower,
      treeId: tree,
      streams: 10_000,
      idleStreams: 0,
      rounds: quick ? 10 : 30,
      fanout: { id: "sse-fanout-10k", p99TargetMs: 250 },
    });
    await many.stop();
  };
  if (manyReadersOnly) {
    await manyReaders();
    report.print();
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  const startup = async () => {
    console.log(`Start-up with ${settings.startupCards} cards...`);
    const storeDir = path.join(workDir, "store-100k");
    mkdirSync(storeDir);
    const filler = await startPinned({
      command: () => [process.execPath, "dist/server.mjs"],
      env: { DATA_DIR: storeDir },
      logFile: path.join(workDir, "filler.log"),
      readyPath: "/healthz",
    });
    const started = performance.now();
    const filled = await fill(filler, settings.startupCards);
    report.add({ id: "seed-100k", scenario: `seed ${settings.startupCards} cards (10 trees) via /cards/seed`, ms: performance.now() - started, rssMb: filler.rss() / 1e6 });
    await filler.stop();
    await startupScenarios({
      report,
      dataDir: storeDir,
      workDir,
      client: filled.client,
      treeId: filled.treeIds[0],
      cards: settings.startupCards,
      repetitions: settings.repetitions,
      quick,
    });
  };
  if (startupOnly) {
    await startup();
    report.print();
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  const dataDir = path.join(workDir, "data");
  mkdirSync(dataDir);
  if (offlineOnly) {
    const offline = await startPinned({
      command: () => [process.execPath, "dist/server.mjs"],
      env: { DATA_DIR: dataDir },
      logFile: path.join(workDir, "server.log"),
      readyPath: "/healthz",
    });
    console.log("Offline writing...");
    await offlineScenarios({ report, baseUrl: offline.url, quick, serverArgs: ["dist/server.mjs"], noSimulation: flag("no-simulation"), serverPid: offline.process.pid });
    await offline.stop();
    report.print();
    report.write(path.join(ROOT, "bench", "results.json"));
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  if (presenceOnly) {
    const presence = await startPinned({
      command: () => [process.execPath, "dist/server.mjs"],
      env: { DATA_DIR: dataDir, SIGNUP_LIMIT_PER_ADDRESS: "100" },
      logFile: path.join(workDir, "server.log"),
      readyPath: "/healthz",
    });
    console.log("Presence: card writes with 0 and 200 watchers...");
    const owner = await CardtreeClient.signUp(presence.url, "owner@presence.bench.example");
    const tree = await owner.treeWith("Presence", generateTree(200, 30));
    await presenceScenarios({ report, server: presence, owner, treeId: tree, writes: quick ? 100 : 1000 });
    await presence.stop();
    report.print();
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  if (idempotencyOnly) {
    await idempotencyScenarios({ report, workDir, dataDir, seconds: quick ? 3 : 10, rounds: quick ? 1 : 3 });
    report.print();
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  if (liveBrowserOnly) {
    const live = await startPinned({
      command: () => [process.execPath, "dist/server.mjs"],
      env: { DATA_DIR: dataDir },
      logFile: path.join(workDir, "server.log"),
      readyPath: "/healthz",
    });
    console.log("Live changes between two browser contexts...");
    await liveBrowserScenarios({ report, baseUrl: live.url });
    await live.stop();
    report.print();
    rmSync(workDir, { recursive: true, force: true });
    return;
  }
  const server = await startPinned({
    command: () =>
      profile
        ? [process.execPath, "--cpu-prof", `--cpu-prof-dir=${profileDir}`, "--import", "tsx", "src/main.ts"]
        : [process.execPath, "dist/server.mjs"],
    // The live scenario opens 1,000 streams as one user, from the bench's one address, beside
    // the load's connections.
    env: { DATA_DIR: dataDir, LIVE_STREAMS_PER_USER: "5000", MAX_CONNECTIONS_PER_ADDRESS: "0" },
    logFile: path.join(workDir, "server.log"),
    readyPath: "/healthz",
  });

  console.log("Generating and importing trees...");
  const reader = await CardtreeClient.signUp(server.url, "reader@bench.example");
  const writer = await CardtreeClient.signUp(server.url, "writer@bench.example");
  if (outlinesOnly) {
    console.log("OPML and gkw against Markdown...");
    await outlineScenarios({ report, server, writer, repetitions: settings.repetitions });
    await server.stop();
    report.print();
    rmSync(workDir, { recursive: true, force: true });
    return;
  }

  const big = generateTree(10_000, 1);
  const started = performance.now();
  const bigTree = await reader.treeWith("Bench 10k", big);
  report.add({ id: "seed-10k", scenario: `seed a 10k-card tree (depth ${maxDepth(big)}) via /cards/seed`, ms: performance.now() - started });
  const publicUrl = "bench-10k";
  await reader.json("PUT", `/api/trees/${bigTree}`, { publicUrl });
  const small = generateTree(1_000, 4);
  const smallTree = await writer.treeWith("Bench 1k", small);
  const writerBig = await writer.treeWith("Bench 10k (writes)", generateTree(10_000, 5));

  const writes = (seconds: number) =>
    writeScenarios({
      report,
      server,
      writer,
      trees: [
        { id: smallTree, label: "1k-card tree", rowId: "create-1k" },
        { id: writerBig, label: "10k-card tree", rowId: "create-10k" },
      ],
      seconds,
      rounds: settings.rounds,
    });

  const wire = async () => {
    console.log("On the wire: a 20,020-card tree compressed...");
    const count = 20_020;
    const treeId = await writer.treeWith("Bench 20k (wire)", generateTree(count, 11));
    await wireScenarios({
      report,
      server,
      client: writer,
      treeId,
      cardCount: count,
      workDir,
      seconds: settings.loadSeconds,
      connections: settings.readConnections,
      rounds: settings.rounds,
    });
  };
  if (wireOnly) {
    await wire();
    await server.stop();
    report.print();
    rmSync(workDir, { recursive: true, force: true });
    return;
  }

  if (writesOnly) {
    console.log("Writes (wrk)...");
    await writes(10);
    await server.stop();
    report.print();
    rmSync(workDir, { recursive: true, force: true });
    return;
  }

  console.log("Reads (wrk)...");
  await readScenarios({
    report,
    server,
    reader,
    treeId: bigTree,
    publicUrl,
    cardCount: countCards(big),
    workDir,
    seconds: settings.loadSeconds,
    connections: settings.readConnections,
    rounds: settings.rounds,
  });

  await wire();

  console.log("Live streams...");
  await liveScenarios({ report, server, writer, treeId: smallTree, streams: 200, idleStreams: 1000, rounds: quick ? 30 : 100 });
  if (liveOnly) {
    await server.stop();
    report.print();
    rmSync(workDir, { recursive: true, force: true });
    return;
  }

  console.log("Writes (wrk)...");
  await writes(settings.loadSeconds);

  console.log("Imports and exports...");
  await fileScenarios({ report, server, writer, workDir, repetitions: settings.repetitions, large: !quick });
  if (quick) report.note("--quick: no 10 MB import; impress and pandoc pptx on a 100 KB sample, not the 1 MB document");
  console.log("OPML and gkw against Markdown...");
  await outlineScenarios({ report, server, writer, repetitions: settings.repetitions });

  console.log("Browser client in Chromium...");
  await browserScenarios({ report, baseUrl: server.url, sizes: quick ? [5_000] : [5_000, 20_000] });
  if (quick) report.note("--quick: browser scenarios on the 5,000-card tree only");
  await liveBrowserScenarios({ report, baseUrl: server.url, writes: quick ? 10 : 30 });
  console.log("Offline writing...");
  await offlineScenarios({ report, baseUrl: server.url, quick, serverArgs: ["dist/server.mjs"], serverPid: server.process.pid });
  await server.stop();

  await startup();

  await manyReaders();

  console.log("Hostile traffic...");
  await hostileScenarios({ report, workDir, seconds: quick ? 2 : 6 });

  report.print();
  report.write(path.join(ROOT, "bench", "results.json"));
  if (profile) {
    const file = readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"));
    if (file) {
      console.log(`\nCPU profile of the main server: ${path.join(profileDir, file)}`);
      summariseProfile(path.join(profileDir, file), 25);
    }
    console.log(`Kept ${workDir} for the profile.`);
  } else {
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();

/**
 * `--idempotency`: an Idempotency-Key's cost on both stores in one run, each store's keyed
 * and plain windows in pairs side by side (scenarios/writes.ts), so drift falls on both alike.
 * PostgreSQL gets a fresh database, dropped after.
 */
async function idempotencyScenarios(options: { report: Report; workDir: string; dataDir: string; seconds: number; rounds: number }): Promise<void> {
  const database = `cardtree_bench_idempotency_${Date.now()}`;
  const query = async (sql: string): Promise<void> => void (await queryOnce(sql));
  await query(`CREATE DATABASE ${database}`);
  const stores: { store: string; env: Record<string, string> }[] = [
    { store: "nedb", env: { DATA_DIR: options.dataDir } },
    { store: "postgres", env: { STORE: "postgres", DATABASE_URL: databaseUrl(database) } },
  ];
  const servers: { store: string; server: Awaited<ReturnType<typeof startPinned>>; writer: CardtreeClient; tree: { id: string; label: string } }[] = [];
  try {
    for (const { store, env } of stores) {
      const server = await startPinned({
        command: () => [process.execPath, "dist/server.mjs"],
        env,
        logFile: path.join(options.workDir, `server-${store}.log`),
        readyPath: "/healthz",
      });
      const writer = await CardtreeClient.signUp(server.url, `idempotency-${store}@bench.example`);
      const id = await writer.treeWith("Idempotency", generateTree(1_000, 26));
      servers.push({ store, server, writer, tree: { id, label: "1,000-card tree" } });
    }
    console.log(`Idempotency-Key on both stores (load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")})...`);
    for (const each of servers) {
      await idempotencyCost({ report: options.report, server: each.server, writer: each.writer, tree: each.tree, store: each.store, ...pairedWindows(options.seconds, options.rounds) });
      console.log(`(${each.store} done; load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")})`);
    }
  } finally {
    await Promise.all(servers.map((each) => each.server.stop()));
    await query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
  }
}
