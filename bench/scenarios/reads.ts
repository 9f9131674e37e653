/**
 * Read scenarios on the 10,000-card tree: the REST read (cached, revalidated, right after
 * a write),
 * the same bytes from a bare node:http server and from json-server, the GraphQL whole-tree
 * query, and basic auth's cost on an otherwise identical request.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import type { CardtreeClient } from "../cardtree-client.js";
import { ROOT, startPinned, type Pinned } from "../processes.js";
import { median, type Report } from "../report.js";
import { runWrk, type LoadResult } from "../wrk.js";

export interface ReadSetup {
  report: Report;
  server: Pinned;
  /** Owns only the 10k tree, so GET /api/cards sends the same cards uncached. */
  reader: CardtreeClient;
  treeId: string;
  publicUrl: string;
  cardCount: number;
  workDir: string;
  seconds: number;
  connections: number;
  /** How many times the compared runs alternate; the median is kept. */
  rounds: number;
}

/** The median run by requests/s. */
function middle(runs: readonly LoadResult[]): LoadResult {
  return [...runs].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)[Math.floor(runs.length / 2)];
}

function row(setup: ReadSetup, id: string, scenario: string, result: LoadResult, bytes: number, note?: string) {
  return setup.report.add({
    id,
    scenario,
    requestsPerSecond: result.requestsPerSecond,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    rssMb: result.peakRssMb,
    bytes,
    errors: result.errors,
    note,
  });
}

export async function readScenarios(setup: ReadSetup): Promise<void> {
  const { report, server, reader, treeId } = setup;
  const load = (url: string, headers: Record<string, string> = {}, script?: Record<string, string>, pid = server.process.pid!) =>
    runWrk({ url, headers, script, seconds: setup.seconds, connections: setup.connections, targetPid: pid });
  const auth = { Authorization: reader.authorization };

  const cardsPath = `/api/trees/${treeId}/cards`;
  const first = await reader.timed(cardsPath);
  const body = first.bytes;
  const etag = (await reader.request("GET", cardsPath)).headers.get("etag");
  const bodyFile = path.join(setup.workDir, "cards.json");
  writeFileSync(bodyFile, body);
  report.note(`10k-card tree: ${setup.cardCount} cards, cards response ${(body.length / 1e6).toFixed(2)} MB`);

  const raw = await startPinned({
    command: () => [process.execPath, "bench/raw-server.mjs", bodyFile],
    logFile: path.join(setup.workDir, "raw-server.log"),
    readyPath: "/healthz",
  });
  const dbFile = path.join(setup.workDir, "db.json");
  writeFileSync(dbFile, JSON.stringify({ cards: JSON.parse(body.toString("utf8")) }));
  const jsonServer = await startPinned({
    command: (port) => [
      process.execPath,
      path.join(ROOT, "node_modules/json-server/lib/cli/bin.js"),
      dbFile,
      ...["--host", "127.0.0.1", "--port", String(port), "--quiet"],
    ],
    logFile: path.join(setup.workDir, "json-server.log"),
    readyPath: "/db",
    cwd: setup.workDir,
  });
  const jsonLength = (await (await fetch(jsonServer.url + "/cards")).arrayBuffer()).byteLength;

  // The three servers take turns, round after round, and each one's median run is kept:
  // on a machine shared with other work, one run apiece can differ by 2x from neighbours'
  // bursts alone. The idle ones wait on the same core, costing nothing.
  const restRuns: LoadResult[] = [];
  const rawRuns: LoadResult[] = [];
  const jsonRuns: LoadResult[] = [];
  for (let round = 0; round < setup.rounds; round++) {
    restRuns.push(await load(server.url + cardsPath, auth));
    rawRuns.push(await load(raw.url + "/cards", {}, undefined, raw.process.pid));
    jsonRuns.push(await load(jsonServer.url + "/cards", {}, undefined, jsonServer.process.pid));
  }
  await raw.stop();
  await jsonServer.stop();
  const note = setup.rounds > 1 ? `median of ${setup.rounds} alternated runs` : undefined;
  const rest = row(setup, "rest-read", `REST GET /api/trees/:id/cards, ${setup.cardCount} cards`, middle(restRuns), body.length, note);
  const rawResult = row(setup, "raw", "raw node:http, same precomputed buffer", middle(rawRuns), body.length, note);
  const jsonResult = row(setup, "json-server", "json-server 0.17, same cards from a JSON file", middle(jsonRuns), jsonLength, ["pretty-printed, as json-server sends it", note].filter(Boolean).join("; "));
  if (etag) {
    const revalidate = await load(server.url + cardsPath, { ...auth, "If-None-Match": etag });
    row(setup, "rest-304", "REST same read with If-None-Match (304)", revalidate, 0);
  }

  const ratioToRaw = rest.requestsPerSecond! / rawResult.requestsPerSecond!;
  const ratioToJsonServer = rest.requestsPerSecond! / jsonResult.requestsPerSecond!;
  report.note(`REST read / raw limit = ${ratioToRaw.toFixed(2)}; REST read / json-server = ${ratioToJsonServer.toFixed(2)}`);
  report.target({ name: "REST read vs raw buffer", wanted: ">= 0.5", measured: ratioToRaw.toFixed(2), met: ratioToRaw >= 0.5 });
  report.target({ name: "REST read vs json-server", wanted: ">= 3", measured: ratioToJsonServer.toFixed(2), met: ratioToJsonServer >= 3 });

  // Edits the tree, so after the comparisons that need the bytes unchanged.
  await readAfterWrite(setup, cardsPath);
  await graphqlScenario(setup, rest.requestsPerSecond!, load);
  await authScenario(setup, load);
}

/**
 * The caches' miss path: each read follows an edit of one card, so it reads the store and
 * serializes again (REST), or executes and serializes again (GraphQL, `graphqlQuery`).
 * One request at a time, as a client that reloads after saving.
 */
async function readAfterWrite(setup: ReadSetup, cardsPath: string, graphqlQuery?: string): Promise<void> {
  const { report, reader } = setup;
  const cards = await reader.json<{ _id: string }[]>("GET", cardsPath);
  const timings: number[] = [];
  const rounds = Math.max(10, setup.seconds * 3);
  for (let i = 0; i < rounds; i++) {
    // Content no earlier round wrote: an edit that changes nothing is no change, and moves no revision.
    const label = graphqlQuery === undefined ? "REST" : "GraphQL";
    await reader.json("PUT", `${cardsPath}/${cards[i % cards.length]._id}`, { content: `${label} edit ${i}` });
    const read = graphqlQuery === undefined ? await reader.timed(cardsPath) : await reader.timed("/graphql", { query: graphqlQuery });
    if (read.status !== 200) throw new Error(`The read after an edit answered ${read.status}`);
    timings.push(read.ms);
  }
  timings.sort((a, b) => a - b);
  const what = graphqlQuery === undefined ? "REST read" : "GraphQL whole tree";
  report.add({
    id: graphqlQuery === undefined ? "rest-after-write" : "graphql-after-write",
    scenario: `${what} right after an edit (cache miss), one at a time`,
    requestsPerSecond: 1000 / median(timings),
    p50Ms: median(timings),
    p99Ms: timings[Math.min(timings.length - 1, Math.floor(timings.length * 0.99))],
    note: `${rounds} edit+read rounds; req/s = 1 / p50`,
  });
}

type Load = (url: string, headers?: Record<string, string>, script?: Record<string, string>) => Promise<LoadResult>;

/** `children` nested `depth` times under the tree's first column, every REST field on each card. */
function wholeTreeQuery(treeId: string, depth: number): string {
  let selection = "";
  for (let level = 0; level < depth; level++) selection = `{ ...C${selection ? ` children ${selection}` : ""} }`;
  return `query WholeTree { tree(id: "${treeId}") { roots ${selection} } }
fragment C on Card { id treeId parentId content position createdAt updatedAt }`;
}

function countNested(nodes: { children?: unknown[] }[] | undefined): number {
  let count = 0;
  const stack = [...(nodes ?? [])];
  while (stack.length > 0) {
    const node = stack.pop()!;
    count++;
    stack.push(...((node.children as { children?: unknown[] }[] | undefined) ?? []));
  }
  return count;
}

async function graphqlScenario(setup: ReadSetup, restRate: number, load: Load): Promise<void> {
  const { report, server, reader, treeId } = setup;
  const query = wholeTreeQuery(treeId, 8);
  const res = await reader.request("POST", "/graphql", { query });
  const text = await res.text();
  let answer: { data?: { tree?: { roots?: { children?: unknown[] }[] } }; errors?: { message: string }[] } = {};
  try {
    answer = JSON.parse(text);
  } catch {
    // Reported below with the status.
  }
  const cards = countNested(answer.data?.tree?.roots);
  if (!res.ok || answer.errors || cards !== setup.cardCount) {
    const why = answer.errors?.[0]?.message ?? `HTTP ${res.status}: ${text.slice(0, 120)}`;
    report.note(`GraphQL whole-tree query skipped: /graphql is not answering it yet (${why}; ${cards} cards returned)`);
    report.target({ name: "GraphQL whole tree vs REST read", wanted: "<= 2x the time", measured: "not measured", met: null });
    return;
  }
  const bodyFile = path.join(setup.workDir, "graphql-body.json");
  writeFileSync(bodyFile, JSON.stringify({ query }));
  const result = await load(server.url + "/graphql", { Authorization: reader.authorization }, { BENCH_METHOD: "POST", BENCH_BODY_FILE: bodyFile });
  row(setup, "graphql", "GraphQL whole tree, 8 levels of children", result, Buffer.byteLength(text));
  const times = restRate / result.requestsPerSecond;
  report.target({ name: "GraphQL whole tree vs REST read", wanted: "<= 2x the time", measured: `${times.toFixed(1)}x`, met: times <= 2 });
  // The miss path too: a whole-tree query right after an edit executes again.
  await readAfterWrite(setup, `/api/trees/${treeId}/cards`, query);
  const restMiss = report.find("rest-after-write")?.p50Ms;
  const graphqlMiss = report.find("graphql-after-write")?.p50Ms;
  if (restMiss && graphqlMiss) {
    report.note(
      `GraphQL whole tree right after an edit: ${graphqlMiss.toFixed(0)} ms, ${(graphqlMiss / restMiss).toFixed(1)}x the REST read right after an edit (${restMiss.toFixed(0)} ms)`,
    );
  }
}

/**
 * The fair pair for basic auth's cost: the public read of the same tree, once anonymous
 * and once with the owner's credentials. Same route, handler and bytes; the only
 * difference is the Authorization header and the credential check it triggers.
 */
async function authScenario(setup: ReadSetup, load: Load): Promise<void> {
  const { report, server, reader, publicUrl } = setup;
  const url = `${server.url}/api/public/${publicUrl}`;
  const bytes = (await (await fetch(url)).arrayBuffer()).byteLength;
  const anonymous: LoadResult[] = [];
  const authed: LoadResult[] = [];
  // Three rounds even with --quick: the target is a 10% difference, and a single pair of
  // 1 s runs moved by 10-15% with the neighbours' load.
  const rounds = Math.max(3, setup.rounds);
  for (let i = 0; i < rounds; i++) {
    anonymous.push(await load(url));
    authed.push(await load(url, { Authorization: reader.authorization }));
  }
  const note = `median of ${rounds} alternated runs`;
  row(setup, "public-anonymous", "public read GET /api/public/:url, no credentials", middle(anonymous), bytes, note);
  row(setup, "public-basic", "same public read with basic credentials", middle(authed), bytes, note);
  const loss = 1 - middle(authed).requestsPerSecond / middle(anonymous).requestsPerSecond;
  report.target({
    name: "authenticated read vs unauthenticated",
    wanted: "within 10%",
    measured: loss >= 0 ? `${(loss * 100).toFixed(1)}% slower` : `${(-loss * 100).toFixed(1)}% faster`,
    met: loss <= 0.1,
  });
}
