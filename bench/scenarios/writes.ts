/**
 * Card creation under load: 16 connections POSTing new cards (each body numbered by
 * bench/wrk.lua), each answered only once its change is in changes.log and NeDB has
 * appended the card and the tree's new revision to their datafiles. Writes to one tree are serialised by its lock, so this is
 * the throughput of one busy document.
 */
import type { CardtreeClient } from "../cardtree-client.js";
import type { Pinned } from "../processes.js";
import type { Report } from "../report.js";
import { readFileSync } from "node:fs";
import { median } from "../report.js";
import { runWrk } from "../wrk.js";

/**
 * The first wave's figures (docs/performance.md, before the change log): each card write
 * now also appends its change to changes.log first (issue 14), which may cost at most 20%.
 */
const FIRST_WAVE_WRITES_PER_SECOND: Record<string, number> = { "create-1k": 903.5, "create-10k": 1045.6 };

export async function writeScenarios(options: {
  report: Report;
  server: Pinned;
  writer: CardtreeClient;
  trees: { id: string; label: string; rowId: string }[];
  seconds: number;
  /** Alternations of the runs with and without Idempotency-Key. */
  rounds: number;
}): Promise<void> {
  const { report, server, writer } = options;
  for (const tree of options.trees) {
    const before = await writer.json<{ _id: string; parentId: string | null }[]>("GET", `/api/trees/${tree.id}/cards`);
    const parent = before.find((c) => c.parentId === null)!;
    const result = await runWrk({
      url: `${server.url}/api/trees/${tree.id}/cards`,
      headers: { Authorization: writer.authorization },
      script: { BENCH_CARD_TREE: tree.id, BENCH_CARD_PARENT: parent._id },
      seconds: options.seconds,
      connections: 16,
      targetPid: server.process.pid!,
    });
    const after = await writer.json<unknown[]>("GET", `/api/trees/${tree.id}/cards`);
    report.add({
      id: tree.rowId,
      scenario: `create cards, 16 connections, ${tree.label}`,
      requestsPerSecond: result.requestsPerSecond,
      p50Ms: result.p50Ms,
      p99Ms: result.p99Ms,
      rssMb: result.peakRssMb,
      errors: result.errors,
      note: `${after.length - before.length} cards stored for ${result.requests} answered`,
    });
    const firstWave = FIRST_WAVE_WRITES_PER_SECOND[tree.rowId];
    if (firstWave !== undefined) {
      const ratio = result.requestsPerSecond / firstWave;
      report.target({
        name: `card writes with the change log, ${tree.label}, vs the first wave (${firstWave} req/s)`,
        wanted: ">= 0.8",
        measured: ratio.toFixed(2),
        met: ratio >= 0.8,
      });
    }
  }
  await idempotencyCost({ ...options, tree: options.trees[0] });
}

/** CPU seconds the process has used (user + system), from /proc: 100 ticks a second on Linux. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * What Idempotency-Key costs a card write (issue 26: at most 10% of the throughput): the
 * same creations with and without a key each, alternated `rounds` times (ABBA) so that drift
 * of the machine's load falls on both alike; the medians are compared. The server's CPU time
 * per answered write is measured too: on a machine others load, throughput swings with
 * their load, CPU per write much less.
 */
export async function idempotencyCost(options: {
  report: Report;
  server: Pinned;
  writer: CardtreeClient;
  tree: { id: string; label: string };
  seconds: number;
  rounds: number;
  /** Names the store in the rows' ids and labels (`--idempotency` runs both stores). */
  store?: string;
}): Promise<void> {
  const { report, server, writer } = options;
  const tree = options.store ? { ...options.tree, label: `${options.tree.label}, ${options.store}` } : options.tree;
  const idSuffix = options.store ? `-${options.store}` : "";
  const cards = await writer.json<{ _id: string; parentId: string | null }[]>("GET", `/api/trees/${tree.id}/cards`);
  const parent = cards.find((c) => c.parentId === null)!;
  const runs = { plain: [] as number[], keyed: [] as number[] };
  const p50 = { plain: [] as number[], keyed: [] as number[] };
  const cpuMs = { plain: [] as number[], keyed: [] as number[] };
  let errors = 0;
  for (let round = 0; round < options.rounds; round++) {
    // Plain first in even rounds, keyed first in odd ones: the tree grows and the machine's
    // load drifts during a round, and neither should fall on one kind only.
    const order = round % 2 === 0 ? (["plain", "keyed"] as const) : (["keyed", "plain"] as const);
    for (const kind of order) {
      const cpuBefore = cpuSeconds(server.process.pid!);
      const result = await runWrk({
        url: `${server.url}/api/trees/${tree.id}/cards`,
        headers: { Authorization: writer.authorization },
        script: { BENCH_CARD_TREE: tree.id, BENCH_CARD_PARENT: parent._id, ...(kind === "keyed" ? { BENCH_IDEMPOTENCY_KEYS: "1" } : {}) },
        seconds: options.seconds,
        connections: 16,
        targetPid: server.process.pid!,
      });
      cpuMs[kind].push(((cpuSeconds(server.process.pid!) - cpuBefore) * 1000) / Math.max(1, result.requests));
      runs[kind].push(result.requestsPerSecond);
      p50[kind].push(result.p50Ms);
      errors += result.errors;
    }
  }
  for (const kind of ["plain", "keyed"] as const) {
    report.add({
      id: `create-idempotency-${kind}${idSuffix}`,
      scenario: `create cards, 16 connections, ${tree.label}, ${kind === "keyed" ? "each with its own Idempotency-Key" : "no Idempotency-Key"} (median of ${options.rounds})`,
      requestsPerSecond: median(runs[kind]),
      p50Ms: median(p50[kind]),
      errors,
      note: `${runs[kind].map((r) => r.toFixed(0)).join(" / ")} req/s; server CPU ${median(cpuMs[kind]).toFixed(2)} ms a write`,
    });
  }
  const cpuRatio = median(cpuMs.plain) / median(cpuMs.keyed);
  report.target({
    name: `card writes with an Idempotency-Key each vs without, ${tree.label}: server CPU a write (without / with)`,
    wanted: ">= 0.90",
    measured: cpuRatio.toFixed(2),
    met: cpuRatio >= 0.9,
  });
  const ratio = median(runs.keyed) / median(runs.plain);
  report.target({
    name: `card writes with an Idempotency-Key each vs without, ${tree.label}`,
    wanted: ">= 0.90",
    measured: ratio.toFixed(2),
    met: ratio >= 0.9,
  });
}
