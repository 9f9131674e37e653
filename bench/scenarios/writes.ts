/**
 * Card creation under load: 16 connections POSTing new cards (each body numbered by
 * bench/wrk.lua), each answered only once its change is in changes.log and NeDB has
 * appended the card and the tree's new revision to their datafiles. Writes to one tree are serialised by its lock, so this is
 * the throughput of one busy document.
 */
import type { CardtreeClient } from "../cardtree-client.js";
import type { Pinned } from "../processes.js";
import type { Report } from "../report.js";
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
}
