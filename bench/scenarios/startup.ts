/**
 * Start-up with 100,000 cards in the store: the time from spawn until /healthz answers and
 * the resident memory of the process tree then and after reading one 10,000-card tree, for
 * each way the server is started: `npm start` (npm, then scripts/start.mjs checking that
 * dist/ is current and importing the compiled server), `node dist/server.mjs` (the compiled
 * server alone) and `node --import tsx src/main.ts` (the sources, as the tests run them).
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { build } from "../../scripts/build.mjs";
import { CardtreeClient } from "../cardtree-client.js";
import { generateTree } from "../generate.js";
import { startPinned, type Pinned } from "../processes.js";
import { median, type Report } from "../report.js";

const START_COMMANDS: { id: string; label: string; command: () => string[] }[] = [
  { id: "npm-start", label: "npm start (compiled)", command: () => ["npm", "start", "--silent"] },
  { id: "compiled", label: "node dist/server.mjs", command: () => [process.execPath, "dist/server.mjs"] },
  { id: "node-tsx", label: "node --import tsx src/main.ts", command: () => [process.execPath, "--import", "tsx", "src/main.ts"] },
];

/** How many times scripts/start.mjs logged a build into `logFile`. */
function builds(logFile: string): number {
  return existsSync(logFile) ? readFileSync(logFile, "utf8").split('"message":"built"').length - 1 : 0;
}

/** Fills a data directory with `cards` cards in 10,000-card trees through the API. */
export async function fill(server: Pinned, cards: number): Promise<{ client: CardtreeClient; treeIds: string[] }> {
  const client = await CardtreeClient.signUp(server.url, "startup@bench.example");
  const treeIds: string[] = [];
  for (let made = 0; made < cards; made += 10_000) {
    treeIds.push(await client.treeWith(`Store ${made / 10_000}`, generateTree(Math.min(10_000, cards - made), 100 + made)));
  }
  return { client, treeIds };
}

export async function startupScenarios(options: {
  report: Report;
  dataDir: string;
  workDir: string;
  client: CardtreeClient;
  treeId: string;
  cards: number;
  repetitions: number;
  /** Only `npm start` (for --quick). */
  quick: boolean;
}): Promise<void> {
  const { report } = options;
  // What `npm run build` makes, so that no start below builds. Sources edited meanwhile (the
  // repository is shared) would make npm start build: such a start is measured again.
  await build();
  for (const start of START_COMMANDS) {
    if (options.quick && start.id !== "npm-start") {
      report.note(`--quick: start-up by ${start.label} not measured`);
      continue;
    }
    const logFile = path.join(options.workDir, `startup-${start.id}.log`);
    const times: number[] = [];
    const rssAtStart: number[] = [];
    const serverRssAtStart: number[] = [];
    let rssAfterRead = 0;
    let rebuilds = 0;
    for (let i = 0; i < options.repetitions; i++) {
      const builtBefore = builds(logFile);
      const server = await startPinned({
        command: start.command,
        env: { DATA_DIR: options.dataDir },
        logFile,
        readyPath: "/healthz",
        timeoutMs: 120_000,
      });
      if (builds(logFile) > builtBefore && rebuilds++ < 2) {
        report.note(`${start.label} rebuilt dist/ (sources changed during the run); that start is not counted`);
        await server.stop();
        i--;
        continue;
      }
      times.push(server.startMs);
      rssAtStart.push(server.rss());
      serverRssAtStart.push(start.id === "npm-start" ? server.rssBelowRoot() : server.rss());
      const client = new CardtreeClient(server.url, options.client.email, options.client.password);
      await client.timed(`/api/trees/${options.treeId}/cards`);
      rssAfterRead = Math.max(rssAfterRead, server.rss());
      await server.stop();
    }
    const ms = median(times);
    const rss = median(rssAtStart) / 1e6;
    report.add({
      id: `startup-${start.id}`,
      scenario: `start-up, ${options.cards} cards stored: ${start.label}`,
      ms,
      rssMb: rss,
      note:
        `RSS ${(rssAfterRead / 1e6).toFixed(0)} MB after reading a 10k tree` +
        (start.id === "npm-start" ? `; npm's own process included (the server alone: ${(median(serverRssAtStart) / 1e6).toFixed(0)} MB at start)` : ""),
    });
    report.target({ name: `start-up, ${start.label}`, wanted: "< 2000 ms", measured: `${ms.toFixed(0)} ms`, met: ms < 2000 });
    // npm start's row counts npm's own process too (~60 MB); the target is the server's.
    const serverRss = median(serverRssAtStart) / 1e6;
    const whose = start.id === "npm-start" ? `${start.label}, the server without npm's process` : start.label;
    report.target({ name: `RSS with ${options.cards} cards, ${whose}`, wanted: "< 300 MB", measured: `${serverRss.toFixed(0)} MB`, met: serverRss < 300 });
  }
  await firstGraphqlRequest(options);
}

/**
 * The first /graphql request of a process (issue 27: it stalled ~1.5 s while yoga loaded):
 * sent the moment /healthz answers, and one second later, by the compiled server; the
 * server loads GraphQL right after it starts listening, so the second should find it ready.
 */
async function firstGraphqlRequest(options: { report: Report; dataDir: string; workDir: string; client: CardtreeClient; repetitions: number }): Promise<void> {
  const { report } = options;
  const timings: Record<"now" | "later", number[]> = { now: [], later: [] };
  for (let i = 0; i < options.repetitions; i++) {
    for (const when of ["now", "later"] as const) {
      const server = await startPinned({
        command: () => [process.execPath, "dist/server.mjs"],
        env: { DATA_DIR: options.dataDir },
        logFile: path.join(options.workDir, "first-graphql.log"),
        readyPath: "/healthz",
        timeoutMs: 120_000,
      });
      if (when === "later") await new Promise((resolve) => setTimeout(resolve, 1000));
      const client = new CardtreeClient(server.url, options.client.email, options.client.password);
      const answer = await client.timed("/graphql", { query: "{ me { email } }" });
      if (answer.status !== 200) throw new Error(`the first GraphQL request answered ${answer.status}`);
      timings[when].push(answer.ms);
      await server.stop();
    }
  }
  const now = median(timings.now);
  const later = median(timings.later);
  report.add({ id: "first-graphql-now", scenario: "first GraphQL request, sent as /healthz first answers (node dist/server.mjs)", ms: now });
  report.add({ id: "first-graphql-later", scenario: "first GraphQL request, sent 1 s after /healthz first answers", ms: later });
  report.target({ name: "first GraphQL request of a process (1 s after start)", wanted: "<= 100 ms", measured: `${later.toFixed(0)} ms`, met: later <= 100 });
}
