/**
 * Start-up with 100,000 cards in the store: the time from spawn until /healthz answers and
 * the resident memory then and after reading one 10,000-card tree, for each way to start
 * the server: `npm start` (tsx's CLI, which runs node as a child), `tsx src/main.ts`,
 * `node --import tsx src/main.ts` (what the tests use) and a bundle compiled ahead with
 * esbuild, which shows what tsx's on-the-fly compilation costs.
 */
import path from "node:path";
import { build } from "esbuild";
import { CardtreeClient } from "../cardtree-client.js";
import { generateTree } from "../generate.js";
import { ROOT, startPinned, type Pinned } from "../processes.js";
import { median, type Report } from "../report.js";

/** Under dist/ (git-ignored) so that the bundle's ../dist/web is the browser client. */
const BUNDLE = path.join(ROOT, "dist", "bench-server.mjs");

async function compileServer(): Promise<void> {
  await build({
    entryPoints: [path.join(ROOT, "src", "main.ts")],
    outfile: BUNDLE,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // Dependencies load from node_modules as usual; only our TypeScript is compiled.
    packages: "external",
    logLevel: "error",
  });
}

const START_COMMANDS: { id: string; label: string; command: () => string[] }[] = [
  { id: "npm-start", label: "npm start (tsx CLI)", command: () => ["npm", "start", "--silent"] },
  { id: "tsx", label: "tsx src/main.ts", command: () => [path.join(ROOT, "node_modules/.bin/tsx"), "src/main.ts"] },
  { id: "node-tsx", label: "node --import tsx src/main.ts", command: () => [process.execPath, "--import", "tsx", "src/main.ts"] },
  { id: "compiled", label: "node dist/bench-server.mjs (esbuild)", command: () => [process.execPath, BUNDLE] },
];

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
  /** Only `node --import tsx` and the compiled bundle (for --quick). */
  quick: boolean;
}): Promise<void> {
  const { report } = options;
  await compileServer();
  for (const start of START_COMMANDS) {
    if (options.quick && (start.id === "npm-start" || start.id === "tsx")) continue;
    const times: number[] = [];
    const rssAtStart: number[] = [];
    let rssAfterRead = 0;
    for (let i = 0; i < options.repetitions; i++) {
      const server = await startPinned({
        command: start.command,
        env: { DATA_DIR: options.dataDir },
        logFile: path.join(options.workDir, `startup-${start.id}.log`),
        readyPath: "/healthz",
        timeoutMs: 120_000,
      });
      times.push(server.startMs);
      rssAtStart.push(server.rss());
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
      note: `RSS ${(rssAfterRead / 1e6).toFixed(0)} MB after reading a 10k tree`,
    });
    if (start.id !== "tsx") {
      report.target({ name: `start-up, ${start.label}`, wanted: "< 2000 ms", measured: `${ms.toFixed(0)} ms`, met: ms < 2000 });
    }
    // npm start's figure counts npm and tsx's CLI too; the server is the node process.
    if (start.id === "node-tsx" || start.id === "compiled") {
      report.target({ name: `RSS with ${options.cards} cards, ${start.label}`, wanted: "< 300 MB", measured: `${rss.toFixed(0)} MB`, met: rss < 300 });
    }
  }
}
