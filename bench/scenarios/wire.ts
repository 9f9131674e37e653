/**
 * On the wire (issue 27, SPEC §12): a 20,020-card tree's card list as the bytes a browser
 * receives with brotli, with gzip and plain; how long the first compressed read of a new
 * revision takes and how long it holds up an honest small request meanwhile; and the
 * compressed cached read under load against a bare node:http server sending the same
 * compressed bytes, with the plain read against the same server sending the plain bytes.
 */
import { writeFileSync } from "node:fs";
import os from "node:os";
import http from "node:http";
import path from "node:path";
import type { CardtreeClient } from "../cardtree-client.js";
import { cpuSeconds, startPinned, type Pinned } from "../processes.js";
import { median, percentile, type Report } from "../report.js";
import { runWrk, type LoadResult } from "../wrk.js";

export interface WireSetup {
  report: Report;
  server: Pinned;
  client: CardtreeClient;
  treeId: string;
  cardCount: number;
  workDir: string;
  seconds: number;
  connections: number;
  rounds: number;
}

interface Raw {
  status: number;
  encoding: string;
  etag: string;
  bytes: Buffer;
  ms: number;
}

function get(url: string, headers: Record<string, string>): Promise<Raw> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode!,
            encoding: String(res.headers["content-encoding"] ?? "identity"),
            etag: String(res.headers.etag ?? ""),
            bytes: Buffer.concat(chunks),
            ms: performance.now() - started,
          }),
        );
        res.on("error", reject);
      })
      .on("error", reject);
  });
}

function middle(runs: readonly LoadResult[]): LoadResult {
  return [...runs].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)[Math.floor(runs.length / 2)];
}

/** Asks /healthz every 5 ms until `done` settles; resolves to the slowest answer's time. */
async function probeWhile(url: string, done: Promise<unknown>): Promise<number> {
  let probing = true;
  void done.finally(() => (probing = false));
  const probes: number[] = [];
  while (probing) {
    probes.push((await get(`${url}/healthz`, {})).ms);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return Math.max(0, ...probes);
}

/**
 * The kept full copy in `encoding` (ETag `…-br"` or `…-gzip"`): a big body's first readers get
 * a fast gzip-1 copy (ETag `…-gzip1"`) while the full one is made (docs/decisions.md, "Cached
 * bodies: a fast copy first"), so the sizes on the wire are read once the full copy is kept.
 */
async function fullCopy(url: string, auth: Record<string, string>, encoding: "br" | "gzip"): Promise<Raw> {
  const deadline = performance.now() + 30_000;
  for (;;) {
    const reply = await get(url, { ...auth, "accept-encoding": encoding === "br" ? "gzip, deflate, br" : "gzip" });
    if (reply.encoding === encoding && reply.etag.endsWith(`-${encoding}"`)) return reply;
    if (performance.now() > deadline) throw new Error(`no full ${encoding} copy within 30 s (last: ${reply.encoding}, ETag ${reply.etag})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The first compressed read after an edit compresses the new revision's body; meanwhile a
 * probe asks /healthz every 5 ms, and its slowest answer is how long the event loop was held.
 * The same probe over as long a quiet wait is the machine's own noise, reported beside it.
 * Asked as a browser asks (`gzip, deflate, br`) or as a gzip-only client does: the answer is
 * whichever compressed copy is ready first (the fast gzip-1 one, for a body this big).
 */
async function coldCompression(setup: WireSetup, cardsUrl: string, auth: Record<string, string>, encoding: "br" | "gzip") {
  const cards = await setup.client.json<{ _id: string }[]>("GET", `/api/trees/${setup.treeId}/cards`);
  const reads: number[] = [];
  const stalls: number[] = [];
  const quiet: number[] = [];
  for (let i = 0; i < 5; i++) {
    await setup.client.json("PUT", `/api/trees/${setup.treeId}/cards/${cards[i]._id}`, { content: `wire edit ${encoding} ${i}` });
    // The plain body of the new revision first, so what follows times the compression alone.
    await get(cardsUrl, { ...auth, "accept-encoding": "identity" });
    const readPromise = get(cardsUrl, { ...auth, "accept-encoding": encoding === "br" ? "gzip, deflate, br" : "gzip" });
    const stall = await probeWhile(setup.server.url, readPromise);
    const read = await readPromise;
    quiet.push(await probeWhile(setup.server.url, new Promise((resolve) => setTimeout(resolve, read.ms))));
    if (read.encoding === "identity") throw new Error(`asked for ${encoding}, got the plain bytes`);
    reads.push(read.ms);
    stalls.push(stall);
  }
  return { readMs: median(reads), worstStallMs: Math.max(...stalls), p50StallMs: percentile(stalls, 50), quietWorstMs: Math.max(...quiet) };
}

export async function wireScenarios(setup: WireSetup): Promise<void> {
  const { report, server, client, treeId } = setup;
  const auth = { Authorization: client.authorization };
  const cardsUrl = `${server.url}/api/trees/${treeId}/cards`;

  const plain = await get(cardsUrl, { ...auth, "accept-encoding": "identity" });
  const br = await fullCopy(cardsUrl, auth, "br");
  const gzip = await fullCopy(cardsUrl, auth, "gzip");
  for (const [name, reply] of Object.entries({ plain, br, gzip })) {
    if (reply.status !== 200) throw new Error(`the ${name} read answered ${reply.status}`);
  }
  const mb = (bytes: number) => (bytes / 1e6).toFixed(2);
  report.note(
    `${setup.cardCount}-card tree's card list on the wire: plain ${mb(plain.bytes.length)} MB, brotli ${mb(br.bytes.length)} MB, gzip ${mb(gzip.bytes.length)} MB`,
  );
  const mb3 = (bytes: number) => (bytes / 1e6).toFixed(3);
  report.target({ name: "20k-card list on the wire (brotli)", wanted: "<= 1.2 MB", measured: `${mb3(br.bytes.length)} MB`, met: br.bytes.length <= 1.2e6 });
  report.note(`gzip (for clients without brotli): ${mb3(gzip.bytes.length)} MB`);

  for (const encoding of ["br", "gzip"] as const) {
    const cold = await coldCompression(setup, cardsUrl, auth, encoding);
    report.add({
      id: `wire-cold-${encoding}`,
      scenario: `first read of a new revision asking ${encoding === "br" ? "gzip, deflate, br" : "gzip"} (compresses ${mb(plain.bytes.length)} MB), one at a time`,
      ms: cold.readMs,
      note: `a /healthz probe every 5 ms meanwhile: slowest ${cold.worstStallMs.toFixed(0)} ms (median of the reads' slowest ${cold.p50StallMs.toFixed(0)} ms); the same probe with nothing to compress: slowest ${cold.quietWorstMs.toFixed(0)} ms`,
    });
    report.target({ name: `event loop while compressing (${encoding})`, wanted: "<= 50 ms", measured: `${cold.worstStallMs.toFixed(0)} ms`, met: cold.worstStallMs <= 50 });
  }

  // The cached reads under load: the compressed copy and the plain bytes, each against a
  // bare node:http server sending the very same bytes, taking turns round after round.
  const brNow = await fullCopy(cardsUrl, auth, "br");
  const plainNow = await get(cardsUrl, { ...auth, "accept-encoding": "identity" });
  const brFile = path.join(setup.workDir, "cards.json.br");
  const plainFile = path.join(setup.workDir, "cards-wire.json");
  writeFileSync(brFile, brNow.bytes);
  writeFileSync(plainFile, plainNow.bytes);
  const rawBr = await startPinned({ command: () => [process.execPath, "bench/raw-server.mjs", brFile, "br"], logFile: path.join(setup.workDir, "raw-br.log"), readyPath: "/healthz" });
  const rawPlain = await startPinned({ command: () => [process.execPath, "bench/raw-server.mjs", plainFile], logFile: path.join(setup.workDir, "raw-plain.log"), readyPath: "/healthz" });
  // Server CPU time per request (utime+stime of the server process over the run, every
  // thread): the machine's load bends it far less than requests/s.
  const cpuUs = { cardtreeBr: [] as number[], rawBr: [] as number[], cardtreePlain: [] as number[], rawPlain: [] as number[] };
  const load = async (url: string, headers: Record<string, string>, pid: number, into: number[]) => {
    const before = cpuSeconds(pid);
    const result = await runWrk({ url, headers, seconds: setup.seconds, connections: setup.connections, targetPid: pid });
    into.push(((cpuSeconds(pid) - before) * 1e6) / Math.max(1, result.requests));
    return result;
  };
  const runs = { cardtreeBr: [] as LoadResult[], rawBr: [] as LoadResult[], cardtreePlain: [] as LoadResult[], rawPlain: [] as LoadResult[] };
  for (let round = 0; round < setup.rounds; round++) {
    runs.cardtreeBr.push(await load(cardsUrl, { ...auth, "Accept-Encoding": "br" }, server.process.pid!, cpuUs.cardtreeBr));
    runs.rawBr.push(await load(`${rawBr.url}/cards`, { "Accept-Encoding": "br" }, rawBr.process.pid!, cpuUs.rawBr));
    runs.cardtreePlain.push(await load(cardsUrl, auth, server.process.pid!, cpuUs.cardtreePlain));
    runs.rawPlain.push(await load(`${rawPlain.url}/cards`, {}, rawPlain.process.pid!, cpuUs.rawPlain));
  }
  await rawBr.stop();
  await rawPlain.stop();
  const note = setup.rounds > 1 ? `median of ${setup.rounds} alternated runs` : undefined;
  const add = (id: string, scenario: string, result: LoadResult, bytes: number) =>
    report.add({ id, scenario, requestsPerSecond: result.requestsPerSecond, p50Ms: result.p50Ms, p99Ms: result.p99Ms, rssMb: result.peakRssMb, bytes, errors: result.errors, note });
  const cBr = add("wire-br", `REST cards read with Accept-Encoding: br, ${setup.cardCount} cards`, middle(runs.cardtreeBr), brNow.bytes.length);
  const rBr = add("wire-raw-br", "raw node:http, the same brotli bytes", middle(runs.rawBr), brNow.bytes.length);
  const cPlain = add("wire-plain", `REST cards read, no Accept-Encoding, ${setup.cardCount} cards`, middle(runs.cardtreePlain), plainNow.bytes.length);
  const rPlain = add("wire-raw-plain", "raw node:http, the same plain bytes", middle(runs.rawPlain), plainNow.bytes.length);
  const compressedRatio = cBr.requestsPerSecond! / rBr.requestsPerSecond!;
  const plainRatio = cPlain.requestsPerSecond! / rPlain.requestsPerSecond!;
  report.target({ name: "compressed cached read vs raw server, same bytes", wanted: ">= 0.8", measured: compressedRatio.toFixed(2), met: compressedRatio >= 0.8 });
  report.note(`plain cached read vs raw server, same bytes: ${plainRatio.toFixed(2)} (the REST read's own target, "rest-read" vs "raw", is >= 0.5)`);
  const cpu = (runsOf: number[]) => median(runsOf).toFixed(0);
  report.note(
    `server CPU per request (median of ${setup.rounds}, µs; load average ${os.loadavg().map((n) => n.toFixed(1)).join(", ")}): ` +
      `brotli ${cpu(cpuUs.cardtreeBr)} vs raw ${cpu(cpuUs.rawBr)} (raw/Cardtree ${(median(cpuUs.rawBr) / median(cpuUs.cardtreeBr)).toFixed(2)}); ` +
      `plain ${cpu(cpuUs.cardtreePlain)} vs raw ${cpu(cpuUs.rawPlain)} (${(median(cpuUs.rawPlain) / median(cpuUs.cardtreePlain)).toFixed(2)})`,
  );
}
