/**
 * Card creation under load: 16 connections POSTing new cards (each body numbered by
 * bench/wrk.lua), each answered only once NeDB has appended the card and the tree's new
 * updatedAt to their datafiles. Writes to one tree are serialised by its lock, so this is
 * the throughput of one busy document.
 */
import type { CardtreeClient } from "../cardtree-client.js";
import type { Pinned } from "../processes.js";
import type { Report } from "../report.js";
import { runWrk } from "../wrk.js";

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
  }
}
