/**
 * `npm run bench -- --scale` (issue 17, SPEC §11): the PostgreSQL store against the
 * embedded one, two processes against one, and a store of 1,000,000 cards.
 *
 * 1. **Stores compared**: one server on each store (both pinned to the server core; the
 *    database runs where the system puts it), the same trees seeded through the API as the
 *    read and write scenarios use; the REST whole-tree read (alternating, median of the
 *    rounds), the read right after an edit, and card creation with 16 connections.
 * 2. **Two processes against one** on the same database, neither pinned (a second process
 *    is only worth something with a second core to run on): wrk with two threads, dealt out
 *    round-robin to the ports (bench/wrk.lua, BENCH_TARGETS). One process: both threads to
 *    its port. Writes go to two trees, one per thread, so that neither process writes a
 *    tree the other reads (cross-process notices are not what is measured here).
 * 3. **1,000,000 cards**: the database is filled in SQL (`INSERT ... SELECT` over
 *    `generate_series`) up to a million cards in 10,000-card trees, with records written
 *    as the PostgreSQL store writes them (src/store/postgres-store.ts): a user per tree
 *    (the reader is a collaborator of each), the tree, its cards and one import change
 *    holding them all. Then, for a fresh `node dist/server.mjs` each time: the time from
 *    spawn until `/readyz` answers, RSS then, the first ("cold") read of the 10,000-card
 *    tree the API seeded, and RSS after reading four more trees and after nineteen more
 *    (the read model's budget, READ_MODEL_CARDS, is what bounds it): at once, and settled,
 *    once the idle process has given back what it no longer holds (V8 shrinks its heap
 *    some seconds after a burst). Once more without the malloc setting `npm start` gives
 *    (package.json), to show what it is for. The embedded store's figures for the same
 *    tree: the same restart and first read of its data directory.
 *
 * The database is one of its own (`cardtree_bench_...`) on the server of `DATABASE_URL`,
 * or postgres@127.0.0.1:5432, and is dropped at the end. Without a PostgreSQL the scenario
 * says so and fails.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { CardtreeClient } from "../cardtree-client.js";
import { countCards, generateTree } from "../generate.js";
import { queryOnce } from "../pg-once.js";
import { startPinned, type Pinned } from "../processes.js";
import { median, type Report } from "../report.js";
import { runWrk, type LoadResult } from "../wrk.js";

export interface ScaleOptions {
  report: Report;
  workDir: string;
  seconds: number;
  rounds: number;
  repetitions: number;
  /** Cards in the big store. */
  cards: number;
}

const CARDS_PER_TREE = 10_000;
/** Trees read one after the other to see what memory settles at. */
const MANY_TREES = 20;
/** How long an idle server is watched for its RSS to settle after the reads. */
const SETTLE_MS = 60_000;
/** Settled: it fell, then no fall of more than 1 MB for this long. */
const SETTLED_FOR_MS = 10_000;
const BOTH_CORES = "0,1";

/** The server PostgreSQL runs on, as a URL to its maintenance database. */
export function adminUrl(): string {
  const url = new URL(process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres");
  url.pathname = "/postgres";
  return url.toString();
}

export function databaseUrl(admin: string, name: string): string {
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function adminQuery(admin: string, sql: string): Promise<void> {
  await queryOnce(sql, admin);
}

function middle(runs: readonly LoadResult[]): LoadResult {
  return [...runs].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)[Math.floor(runs.length / 2)];
}

interface Seeded {
  server: Pinned;
  reader: CardtreeClient;
  writer: CardtreeClient;
  bigTree: string;
  smallTree: string;
  writerBig: string;
  /** A second 1k-card tree of the writer's (PostgreSQL only: the two-process writes). */
  otherSmall?: string;
}

/** The trees of the read and write scenarios (same sizes and seeds), through the API. */
async function seed(server: Pinned, second: boolean): Promise<Seeded> {
  const reader = await CardtreeClient.signUp(server.url, "reader@bench.example");
  const writer = await CardtreeClient.signUp(server.url, "writer@bench.example");
  const bigTree = await reader.treeWith("Bench 10k", generateTree(10_000, 1));
  const smallTree = await writer.treeWith("Bench 1k", generateTree(1_000, 4));
  const writerBig = await writer.treeWith("Bench 10k (writes)", generateTree(10_000, 5));
  const otherSmall = second ? await writer.treeWith("Bench 1k (b)", generateTree(1_000, 6)) : undefined;
  return { server, reader, writer, bigTree, smallTree, writerBig, otherSmall };
}

async function firstColumnCard(client: CardtreeClient, treeId: string): Promise<string> {
  const cards = await client.json<{ _id: string; parentId: string | null }[]>("GET", `/api/trees/${treeId}/cards`);
  return cards.find((c) => c.parentId === null)!._id;
}

/** The read right after an edit of one card, one at a time (the caches' miss path). */
async function readAfterEdit(client: CardtreeClient, treeId: string, rounds: number): Promise<{ p50: number; p99: number }> {
  const cardsPath = `/api/trees/${treeId}/cards`;
  const cards = await client.json<{ _id: string }[]>("GET", cardsPath);
  const timings: number[] = [];
  for (let i = 0; i < rounds; i++) {
    await client.json("PUT", `${cardsPath}/${cards[i % cards.length]._id}`, { content: `Scale edit ${i} ${Date.now()}` });
    const read = await client.timed(cardsPath);
    if (read.status !== 200) throw new Error(`The read after an edit answered ${read.status}`);
    timings.push(read.ms);
  }
  timings.sort((a, b) => a - b);
  return { p50: median(timings), p99: timings[Math.min(timings.length - 1, Math.floor(timings.length * 0.99))] };
}

export async function scaleScenarios(options: ScaleOptions): Promise<void> {
  const { report, workDir } = options;
  const admin = adminUrl();
  const name = `cardtree_bench_${randomBytes(6).toString("hex")}`;
  try {
    await adminQuery(admin, `CREATE DATABASE ${name}`);
  } catch (err) {
    const where = new URL(admin).host;
    report.note(`scale: no PostgreSQL to use at ${where} (${String(err)}); set DATABASE_URL to a server where this role may CREATE DATABASE`);
    throw new Error(`The scale scenario needs PostgreSQL: ${String(err)}`, { cause: err });
  }
  const url = databaseUrl(admin, name);
  report.note(`scale: database ${name} on ${new URL(admin).host}, dropped at the end`);
  const running: Pinned[] = [];
  const start = async (label: string, env: Record<string, string>, cores?: string, bare = false) => {
    const server = await startPinned({
      bareEnvironment: bare,
      command: () => [process.execPath, "dist/server.mjs"],
      env: { DATA_DIR: path.join(workDir, `data-${label}`), ...env },
      logFile: path.join(workDir, `scale-${label}.log`),
      readyPath: "/readyz",
      timeoutMs: 120_000,
      cores,
    });
    running.push(server);
    return server;
  };
  const stop = async (server: Pinned) => {
    await server.stop();
    running.splice(running.indexOf(server), 1);
  };
  const pgEnv = { STORE: "postgres", DATABASE_URL: url };
  try {
    for (const dir of ["nedb", "pg-1", "pg-2", "pg-start", "nedb-start"]) mkdirSync(path.join(workDir, `data-${dir}`), { recursive: true });
    // The embedded store's data directory is kept for its restarts in part 3.
    const nedbDir = path.join(workDir, "data-nedb");

    console.log("Scale: the stores compared...");
    const nedb = await seed(await start("nedb", {}), false);
    const postgres = await seed(await start("pg-1", pgEnv), true);
    await storesCompared(options, nedb, postgres);
    const nedbClient = { email: nedb.reader.email, password: nedb.reader.password, tree: nedb.bigTree };
    await stop(nedb.server);
    await stop(postgres.server);

    console.log("Scale: two processes against one...");
    await processesCompared(options, postgres, start, stop, pgEnv);

    console.log(`Scale: ${options.cards.toLocaleString("en")} cards...`);
    await bigStore(options, { url, admin, postgres, nedbDir, nedbClient, start, stop, pgEnv });
  } finally {
    for (const server of [...running]) await server.stop();
    await adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((err: unknown) =>
      console.error(`Could not drop the bench database ${name}: ${String(err)}`),
    );
  }
}

async function storesCompared(options: ScaleOptions, nedb: Seeded, postgres: Seeded): Promise<void> {
  const { report } = options;
  const load = (side: Seeded, client: CardtreeClient, urlPath: string, script?: Record<string, string>, connections = 8) =>
    runWrk({
      url: side.server.url + urlPath,
      headers: { Authorization: client.authorization },
      script,
      seconds: options.seconds,
      connections,
      targetPid: side.server.process.pid!,
    });
  const sides = [
    { id: "nedb", label: "embedded", side: nedb },
    { id: "pg", label: "PostgreSQL", side: postgres },
  ];
  const cardCount = countCards(generateTree(10_000, 1));
  // Warm both read models and caches once, then alternate.
  for (const { side } of sides) await side.reader.timed(`/api/trees/${side.bigTree}/cards`);
  const reads: Record<string, LoadResult[]> = { nedb: [], pg: [] };
  for (let round = 0; round < options.rounds; round++) {
    for (const { id, side } of sides) reads[id].push(await load(side, side.reader, `/api/trees/${side.bigTree}/cards`));
  }
  const note = options.rounds > 1 ? `median of ${options.rounds} alternated runs` : undefined;
  for (const { id, label } of sides) {
    const result = middle(reads[id]);
    report.add({
      id: `scale-read-${id}`,
      scenario: `${label}: REST GET /api/trees/:id/cards, ${cardCount} cards`,
      requestsPerSecond: result.requestsPerSecond,
      p50Ms: result.p50Ms,
      p99Ms: result.p99Ms,
      rssMb: result.peakRssMb,
      errors: result.errors,
      note,
    });
  }
  const readRatio = middle(reads.pg).requestsPerSecond / middle(reads.nedb).requestsPerSecond;
  report.note(`scale: REST whole-tree read, PostgreSQL / embedded = ${readRatio.toFixed(2)}`);

  const rounds = Math.max(10, options.seconds * 3);
  const misses: Record<string, { p50: number; p99: number }> = {};
  for (const { id, label, side } of sides) {
    misses[id] = await readAfterEdit(side.reader, side.bigTree, rounds);
    report.add({
      id: `scale-read-after-edit-${id}`,
      scenario: `${label}: REST read right after an edit, one at a time`,
      requestsPerSecond: 1000 / misses[id].p50,
      p50Ms: misses[id].p50,
      p99Ms: misses[id].p99,
      note: `${rounds} edit+read rounds; req/s = 1 / p50`,
    });
  }

  for (const size of [
    { key: "smallTree" as const, label: "1k-card tree" },
    { key: "writerBig" as const, label: "10k-card tree" },
  ]) {
    const rates: Record<string, number> = {};
    for (const { id, label, side } of sides) {
      const treeId = side[size.key];
      const parent = await firstColumnCard(side.writer, treeId);
      const result = await load(side, side.writer, `/api/trees/${treeId}/cards`, { BENCH_CARD_TREE: treeId, BENCH_CARD_PARENT: parent }, 16);
      rates[id] = result.requestsPerSecond;
      report.add({
        id: `scale-create-${size.key}-${id}`,
        scenario: `${label}: create cards, 16 connections, ${size.label}`,
        requestsPerSecond: result.requestsPerSecond,
        p50Ms: result.p50Ms,
        p99Ms: result.p99Ms,
        rssMb: result.peakRssMb,
        errors: result.errors,
      });
    }
    report.note(`scale: card writes on the ${size.label}, PostgreSQL / embedded = ${(rates.pg / rates.nedb).toFixed(2)}`);
  }
}

type Start = (label: string, env: Record<string, string>, cores?: string, bare?: boolean) => Promise<Pinned>;
type Stop = (server: Pinned) => Promise<void>;

async function processesCompared(options: ScaleOptions, seeded: Seeded, start: Start, stop: Stop, pgEnv: Record<string, string>): Promise<void> {
  const { report } = options;
  const one = await start("pg-1", pgEnv, BOTH_CORES);
  const two = await start("pg-2", pgEnv, BOTH_CORES);
  const readPath = `/api/trees/${seeded.bigTree}/cards`;
  const treeA = seeded.smallTree;
  const treeB = seeded.otherSmall!;
  const writer = new CardtreeClient(one.url, seeded.writer.email, seeded.writer.password);
  const parentA = await firstColumnCard(writer, treeA);
  const parentB = await firstColumnCard(writer, treeB);
  const reader = new CardtreeClient(one.url, seeded.reader.email, seeded.reader.password);
  // Each process reads the tree once, so both runs start from a warm read model.
  for (const server of [one, two]) await fetch(server.url + readPath, { headers: { Authorization: reader.authorization } }).then((r) => r.arrayBuffer());
  const at = (server: Pinned) => `127.0.0.1:${server.port}`;
  const run = (targets: string, authorization: string, connections: number, pids: number[]) =>
    runWrk({
      url: one.url + readPath,
      headers: { Authorization: authorization },
      script: { BENCH_TARGETS: targets },
      threads: 2,
      connections,
      seconds: options.seconds,
      cores: BOTH_CORES,
      targetPid: pids[0],
      otherPids: pids.slice(1),
    });
  const pidOne = [one.process.pid!];
  const pidBoth = [one.process.pid!, two.process.pid!];
  const results: Record<string, LoadResult[]> = { readOne: [], readTwo: [], writeOne: [], writeTwo: [] };
  for (let round = 0; round < options.rounds; round++) {
    results.readOne.push(await run(`${at(one)},${at(one)}`, reader.authorization, 8, pidOne));
    results.readTwo.push(await run(`${at(one)},${at(two)}`, reader.authorization, 8, pidBoth));
  }
  for (let round = 0; round < options.rounds; round++) {
    results.writeOne.push(await run(`${at(one)}:${treeA}:${parentA},${at(one)}:${treeB}:${parentB}`, writer.authorization, 16, pidOne));
    results.writeTwo.push(await run(`${at(one)}:${treeA}:${parentA},${at(two)}:${treeB}:${parentB}`, writer.authorization, 16, pidBoth));
  }
  const note = options.rounds > 1 ? `median of ${options.rounds} alternated runs` : undefined;
  const rows = [
    { key: "readOne", scenario: "PostgreSQL, 1 process: REST read of the 10k-card tree, 8 connections" },
    { key: "readTwo", scenario: "PostgreSQL, 2 processes (round-robin): same read" },
    { key: "writeOne", scenario: "PostgreSQL, 1 process: create cards in two 1k-card trees, 16 connections" },
    { key: "writeTwo", scenario: "PostgreSQL, 2 processes (a tree each): same writes" },
  ];
  for (const { key, scenario } of rows) {
    const result = middle(results[key]);
    report.add({
      id: `scale-processes-${key}`,
      scenario,
      requestsPerSecond: result.requestsPerSecond,
      p50Ms: result.p50Ms,
      p99Ms: result.p99Ms,
      rssMb: result.peakRssMb,
      errors: result.errors,
      note: [note, "unpinned: servers, wrk and PostgreSQL share both cores", key.endsWith("Two") ? "RSS of both" : ""].filter(Boolean).join("; "),
    });
  }
  const readGain = middle(results.readTwo).requestsPerSecond / middle(results.readOne).requestsPerSecond;
  const writeGain = middle(results.writeTwo).requestsPerSecond / middle(results.writeOne).requestsPerSecond;
  report.note(`scale: two processes / one on PostgreSQL: reads ${readGain.toFixed(2)}, writes ${writeGain.toFixed(2)} (2 cores for everything)`);
  await stop(two);
  await stop(one);
}

interface BigStoreSetup {
  url: string;
  admin: string;
  postgres: Seeded;
  nedbDir: string;
  nedbClient: { email: string; password: string; tree: string };
  start: Start;
  stop: Stop;
  pgEnv: Record<string, string>;
}

interface StartFigures {
  startMs: number;
  rssStartMb: number;
  coldReadMs: number;
  /** After reading the first `FEW_TREES` trees. */
  rssAfterMb: number;
  /** After reading every tree given (when more than a few). */
  rssManyMb: number;
  /** After reading every tree given, once RSS stopped falling (when more than a few were read). */
  rssSettledMb: number;
  /** Milliseconds it took to settle. */
  settleMs: number;
}

/** "A few trees": the cold one and four more. */
const FEW_TREES = 5;

/**
 * Starts a server, times its readiness and the first read of `tree`, then reads `more`
 * trees, and stops it.
 */
async function startAndRead(
  setup: BigStoreSetup,
  label: string,
  env: Record<string, string>,
  user: { email: string; password: string },
  tree: string,
  more: readonly string[],
  bare = false,
): Promise<StartFigures> {
  const server = await setup.start(label, env, undefined, bare);
  const rssStartMb = server.rss() / 1e6;
  const client = new CardtreeClient(server.url, user.email, user.password);
  // The credential check is not what is measured: a cheap authenticated request first.
  const me = await client.timed("/api/preferences");
  if (me.status !== 200) throw new Error(`GET /api/preferences answered ${me.status}`);
  const cold = await client.timed(`/api/trees/${tree}/cards`);
  if (cold.status !== 200) throw new Error(`The cold read answered ${cold.status}`);
  let rssAfterMb = server.rss() / 1e6;
  for (const [i, other] of more.entries()) {
    const read = await client.timed(`/api/trees/${other}/cards`);
    if (read.status !== 200) throw new Error(`Reading tree ${other} answered ${read.status}`);
    if (i + 2 === FEW_TREES) rssAfterMb = server.rss() / 1e6;
  }
  const rssManyMb = server.rss() / 1e6;
  const settled = more.length > 0 ? await settle(server) : { mb: rssManyMb, ms: 0 };
  await setup.stop(server);
  return { startMs: server.startMs, rssStartMb, coldReadMs: cold.ms, rssAfterMb, rssManyMb, rssSettledMb: settled.mb, settleMs: settled.ms };
}

/**
 * The idle server's RSS once it has fallen and stopped falling (polled each second, for at
 * most SETTLE_MS; V8's memory reducer shrinks an idle heap a few seconds after a burst).
 */
async function settle(server: Pinned): Promise<{ mb: number; ms: number }> {
  const started = performance.now();
  let low = server.rss();
  let lowAt = started;
  while (performance.now() - started < SETTLE_MS) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const rss = server.rss();
    if (rss < low - 1e6) {
      low = rss;
      lowAt = performance.now();
    } else if (lowAt > started && performance.now() - lowAt >= SETTLED_FOR_MS) {
      break;
    }
  }
  return { mb: Math.min(low, server.rss()) / 1e6, ms: lowAt - started };
}

function rssNote(f: StartFigures): string {
  return (
    `RSS ${f.rssAfterMb.toFixed(0)} MB after reading ${FEW_TREES} trees of 10k cards, ${f.rssManyMb.toFixed(0)} MB just after ${MANY_TREES}, ` +
    `${f.rssSettledMb.toFixed(0)} MB settled (${(f.settleMs / 1000).toFixed(0)} s idle)`
  );
}

function medians(figures: readonly StartFigures[]): StartFigures {
  return {
    startMs: median(figures.map((f) => f.startMs)),
    rssStartMb: median(figures.map((f) => f.rssStartMb)),
    coldReadMs: median(figures.map((f) => f.coldReadMs)),
    rssAfterMb: median(figures.map((f) => f.rssAfterMb)),
    rssManyMb: median(figures.map((f) => f.rssManyMb)),
    rssSettledMb: median(figures.map((f) => f.rssSettledMb)),
    settleMs: median(figures.map((f) => f.settleMs)),
  };
}

async function bigStore(options: ScaleOptions, setup: BigStoreSetup): Promise<void> {
  const { report } = options;
  const { postgres } = setup;
  const reader = { email: postgres.reader.email, password: postgres.reader.password };
  const times = options.repetitions;

  const small: StartFigures[] = [];
  for (let i = 0; i < times; i++) small.push(await startAndRead(setup, "pg-start", setup.pgEnv, reader, postgres.bigTree, []));
  const client = new pg.Client({ connectionString: setup.url });
  await client.connect();
  let stored: number;
  let generatedTrees: string[];
  let databaseMb: number;
  try {
    const before = Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM cards")).rows[0].n);
    const smallStore = medians(small);
    report.add({
      id: "scale-start-small",
      scenario: `PostgreSQL, ${before.toLocaleString("en")} cards stored: start until /readyz`,
      ms: smallStore.startMs,
      rssMb: smallStore.rssStartMb,
      note: `median of ${times}; first read of the 10k-card tree ${smallStore.coldReadMs.toFixed(0)} ms`,
    });
    const started = performance.now();
    generatedTrees = await generate(client, postgres, options.cards - before);
    stored = Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM cards")).rows[0].n);
    databaseMb = Number((await client.query<{ n: string }>("SELECT pg_database_size(current_database()) AS n")).rows[0].n) / 1e6;
    report.add({
      id: "scale-generate",
      scenario: `generate ${(stored - before).toLocaleString("en")} cards in ${generatedTrees.length} trees in SQL, then VACUUM ANALYZE`,
      ms: performance.now() - started,
      note: `database ${databaseMb.toFixed(0)} MB`,
    });
  } finally {
    await client.end();
  }

  const more = generatedTrees.slice(0, MANY_TREES - 1);
  const big: StartFigures[] = [];
  for (let i = 0; i < times; i++) big.push(await startAndRead(setup, "pg-start", setup.pgEnv, reader, postgres.bigTree, more));
  // The same without the malloc setting npm start gives (package.json's start script).
  const bare = await startAndRead(setup, "pg-start", setup.pgEnv, reader, postgres.bigTree, more, true);
  const embedded: StartFigures[] = [];
  for (let i = 0; i < times; i++) {
    embedded.push(await startAndRead(setup, "nedb-start", { DATA_DIR: setup.nedbDir }, setup.nedbClient, setup.nedbClient.tree, []));
  }
  const pgFigures = medians(big);
  const nedbFigures = medians(embedded);
  const smallFigures = medians(small);
  report.add({
    id: "scale-start-big",
    scenario: `PostgreSQL, ${stored.toLocaleString("en")} cards stored: start until /readyz`,
    ms: pgFigures.startMs,
    rssMb: pgFigures.rssStartMb,
    note: `median of ${times}; ${rssNote(pgFigures)}`,
  });
  report.add({
    id: "scale-start-big-bare",
    scenario: `PostgreSQL, ${stored.toLocaleString("en")} cards stored, without npm start's MALLOC_MMAP_THRESHOLD_`,
    ms: bare.startMs,
    rssMb: bare.rssStartMb,
    note: `one start; ${rssNote(bare)}`,
  });
  report.add({
    id: "scale-cold-read-pg",
    scenario: `PostgreSQL, ${stored.toLocaleString("en")} cards stored: first read of the 10k-card tree after start`,
    ms: pgFigures.coldReadMs,
    note: `median of ${times}`,
  });
  report.add({
    id: "scale-cold-read-nedb",
    scenario: "embedded: first read of the same 10k-card tree after start",
    ms: nedbFigures.coldReadMs,
    rssMb: nedbFigures.rssStartMb,
    note: `median of ${times}; its store: the three seeded trees and the write runs' cards; start ${nedbFigures.startMs.toFixed(0)} ms`,
  });
  const growth = pgFigures.startMs / smallFigures.startMs;
  report.target({
    name: `PostgreSQL start-up with ${stored.toLocaleString("en")} cards`,
    wanted: "<= 1000 ms",
    measured: `${pgFigures.startMs.toFixed(0)} ms`,
    met: pgFigures.startMs <= 1000,
  });
  report.target({
    name: "PostgreSQL start-up, 1M cards / small store",
    wanted: "independent of size",
    measured: `${growth.toFixed(2)}x`,
    met: null,
  });
  for (const [what, mb] of [
    ["after start", pgFigures.rssStartMb],
    [`after reading ${FEW_TREES} trees of 10k cards`, pgFigures.rssAfterMb],
    [`just after reading ${MANY_TREES} trees of 10k cards`, pgFigures.rssManyMb],
    [`after reading ${MANY_TREES} trees, settled`, pgFigures.rssSettledMb],
    [`after reading ${MANY_TREES} trees, settled, without npm start's malloc setting`, bare.rssSettledMb],
  ] as const) {
    report.target({ name: `PostgreSQL RSS with ${stored.toLocaleString("en")} cards, ${what}`, wanted: "<= 150 MB", measured: `${mb.toFixed(0)} MB`, met: mb <= 150 });
  }
  const coldRatio = pgFigures.coldReadMs / nedbFigures.coldReadMs;
  report.target({
    name: "PostgreSQL cold read of a 10k-card tree (1M stored) / embedded first read",
    wanted: "<= 2x",
    measured: `${coldRatio.toFixed(2)}x (${pgFigures.coldReadMs.toFixed(0)} / ${nedbFigures.coldReadMs.toFixed(0)} ms)`,
    met: coldRatio <= 2,
  });
}

/**
 * Fills the database up to `cards` more cards, 10,000 a tree, each tree with its own owner
 * (a copy of the reader's record under a new id and address) and the reader as a
 * collaborator. The records are built as text in the store's own key order, so they read
 * back exactly as the store's own; card texts are Markdown of mixed lengths (headings,
 * paragraphs, lists). Ten trees a statement.
 */
export async function generate(client: pg.Client, seeded: Pick<Seeded, "reader">, cards: number): Promise<string[]> {
  if (cards <= 0) return [];
  await client.query("SET synchronous_commit = off");
  const { rows } = await client.query<{ id: string; email: string; record: string }>("SELECT id, email, record::text AS record FROM users WHERE email = $1", [
    seeded.reader.email,
  ]);
  const reader = rows[0];
  const at = new Date().toISOString();
  const treeCount = Math.ceil(cards / CARDS_PER_TREE);
  const ids: string[] = [];
  for (let first = 1; first <= treeCount; first += 10) {
    const last = Math.min(treeCount, first + 9);
    // g: one row per tree, its ids.
    const trees = `
      SELECT t, 'scale' || lpad(t::text, 19, '0') AS tid, 'b0' || lpad(to_hex(t), 22, '0') AS uid
      FROM generate_series($1::integer, $2::integer) AS t`;
    await client.query(
      `INSERT INTO users (id, email, created_at, record)
       SELECT uid, 'scale-' || t || '@bench.example', $6::text,
              replace(replace($4::text, to_json($3::text)::text, to_json(uid)::text), to_json($5::text)::text, to_json('scale-' || t || '@bench.example')::text)::json
       FROM (${trees}) AS g`,
      [first, last, reader.id, reader.record, reader.email, at],
    );
    await client.query(
      `INSERT INTO trees (id, users, public_url, revision, record)
       SELECT tid, ARRAY[uid, $3::text], NULL, 1,
              format('{"__v":0,"_id":%s,"createdAt":%s,"updatedAt":%s,"name":%s,"owner":%s,"users":[%s,%s],"revision":1}',
                     to_json(tid), to_json($4::text), to_json($4::text), to_json('Scale ' || t), to_json(uid), to_json(uid), to_json($3::text))::json
       FROM (${trees}) AS g`,
      [first, last, reader.id, at],
    );
    await client.query(
      `INSERT INTO cards (id, tree_id, trashed, record)
       SELECT cid, tid, NULL,
              format('{"_id":%s,"treeId":%s,"parentId":%s,"content":%s,"position":%s,"createdAt":%s,"updatedAt":%s,"author":%s,"__v":0}',
                     to_json(cid), to_json(tid), coalesce(to_json(pid)::text, 'null'), to_json(content), i % 10, to_json($3::text), to_json($3::text), to_json(uid))::json
       FROM (
         SELECT tid, uid, i,
                'c' || lpad(t::text, 5, '0') || lpad(i::text, 18, '0') AS cid,
                CASE WHEN i < 10 THEN NULL ELSE 'c' || lpad(t::text, 5, '0') || lpad(((i - 10) / 10)::text, 18, '0') END AS pid,
                CASE i % 3
                  WHEN 0 THEN '## Heading ' || i || ' ' || md5(i::text)
                  WHEN 1 THEN 'Paragraph of card ' || i || '. ' || repeat(md5((i * 7)::text) || ' ', 2 + i % 9)
                  ELSE '- ' || md5((i * 13)::text) || E'\\n- ' || repeat('item ', 10 + i % 30) || E'\\n- **done**'
                END AS content
         FROM (${trees}) AS g, generate_series(0, $5::integer - 1) AS i
         WHERE (t - 1) * $5::integer + i < $4::integer
       ) AS c`,
      [first, last, at, cards, CARDS_PER_TREE],
    );
    // One import change a tree, holding its cards as the store's commit writes it.
    await client.query(
      `INSERT INTO changes (tree_id, revision, at, card_ids, record)
       SELECT g.tid, 1, $3::text, array_agg(c.id ORDER BY c.id),
              format('{"treeId":%s,"revision":1,"at":%s,"userId":%s,"kind":"import","before":[],"after":[%s],"tree":{"before":null,"after":%s}}',
                     to_json(g.tid), to_json($3::text), to_json(g.uid), string_agg(c.record::text, ',' ORDER BY c.id), min(tr.record::text))::json
       FROM (${trees}) AS g JOIN cards AS c ON c.tree_id = g.tid JOIN trees AS tr ON tr.id = g.tid
       GROUP BY g.tid, g.uid`,
      [first, last, at],
    );
    for (let t = first; t <= last; t++) ids.push(`scale${String(t).padStart(19, "0")}`);
    process.stdout.write(`  generated ${Math.min(cards, last * CARDS_PER_TREE).toLocaleString("en")} cards\r`);
  }
  process.stdout.write("\n");
  await client.query("VACUUM ANALYZE users, trees, cards, changes");
  return ids;
}
