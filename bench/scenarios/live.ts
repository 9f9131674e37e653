/**
 * Live streams (issue 14): how long after a write's 200 every one of 200 readers following
 * the tree over SSE has its event, and what 1,000 idle streams cost the server in memory.
 * The readers are raw HTTP connections from this process (on the load core); an event
 * counts as arrived when its `id:` line is read.
 */
import http from "node:http";
import type { CardtreeClient } from "../cardtree-client.js";
import type { Pinned } from "../processes.js";
import { median, type Report } from "../report.js";

export interface LiveSetup {
  report: Report;
  server: Pinned;
  writer: CardtreeClient;
  treeId: string;
  streams: number;
  idleStreams: number;
  rounds: number;
  /** The fan-out's row id and p99 target (default: "sse-fanout", 100 ms for 200 streams). */
  fanout?: { id: string; p99TargetMs: number };
}

interface Follower {
  /** Revisions seen so far, with when. */
  seen: Map<number, number>;
  close(): void;
}

function follow(setup: LiveSetup, onEvent: (revision: number) => void): Promise<Follower> {
  const seen = new Map<number, number>();
  return new Promise((resolve, reject) => {
    const req = http.get(`${setup.server.url}/api/trees/${setup.treeId}/events`, { headers: { authorization: setup.writer.authorization } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`events answered ${res.statusCode}`));
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const id = /^id: (\d+)$/m.exec(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (id) {
            seen.set(Number(id[1]), performance.now());
            onEvent(Number(id[1]));
          }
        }
      });
      resolve({ seen, close: () => req.destroy() });
    });
    req.on("error", () => undefined);
  });
}

export async function liveScenarios(setup: LiveSetup): Promise<void> {
  const { report, server, writer, treeId } = setup;
  const [card] = await writer.json<{ _id: string }[]>("GET", `/api/trees/${treeId}/cards`);

  // Fan-out: every round, one edit; the time from its 200 to the last reader's event. The
  // readers that have the round's revision are counted as their events arrive (checking
  // every reader on each event cost this process O(readers^2): ~10^8 steps a round with
  // 10,000 streams, on the core the server's figures depend on).
  let waiting: ((revision: number) => void) | null = null;
  // Opened in batches: 10,000 connections at once would overrun the listen backlog.
  const followers: Follower[] = [];
  for (let opened = 0; opened < setup.streams; opened += 500) {
    const batch = Math.min(500, setup.streams - opened);
    followers.push(...(await Promise.all(Array.from({ length: batch }, () => follow(setup, (revision) => waiting?.(revision))))));
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const rssWithStreams = server.rss();
  const delays: number[] = [];
  const trees = await writer.json<{ _id: string; revision: number }[]>("GET", "/api/trees");
  let target = trees.find((t) => t._id === treeId)!.revision;
  for (let round = 0; round < setup.rounds; round++) {
    const res = await writer.request("PUT", `/api/trees/${treeId}/cards/${card._id}`, { content: `Live ${round}` });
    const answeredAt = performance.now();
    if (res.status !== 200) throw new Error(`the edit answered ${res.status}`);
    await res.arrayBuffer();
    // Nobody else writes this tree meanwhile: each edit is the next revision.
    target++;
    await new Promise<void>((resolve) => {
      let arrived = followers.filter((f) => f.seen.has(target)).length;
      const done = () => {
        if (arrived < followers.length) return;
        waiting = null;
        resolve();
      };
      waiting = (revision) => {
        if (revision !== target) return;
        arrived++;
        done();
      };
      done();
    });
    const last = Math.max(...followers.map((f) => f.seen.get(target)!));
    delays.push(Math.max(0, last - answeredAt));
  }
  for (const follower of followers) follower.close();
  delays.sort((a, b) => a - b);
  const p99 = delays[Math.min(delays.length - 1, Math.floor(delays.length * 0.99))];
  const fanout = setup.fanout ?? { id: "sse-fanout", p99TargetMs: 100 };
  report.add({
    id: fanout.id,
    scenario: `SSE fan-out: ${setup.streams} streams on one tree, a write's 200 to the last stream's event`,
    p50Ms: median(delays),
    p99Ms: p99,
    rssMb: rssWithStreams / 1e6,
    note: `${setup.rounds} edits, one at a time; RSS with the streams open`,
  });
  report.target({
    name: `SSE fan-out to ${setup.streams} streams`,
    wanted: `p99 <= ${fanout.p99TargetMs} ms`,
    measured: `${p99.toFixed(1)} ms`,
    met: p99 <= fanout.p99TargetMs,
  });
  if (setup.idleStreams === 0) {
    report.target({ name: `RSS with ${setup.streams} streams open`, wanted: "<= 400 MB", measured: `${(rssWithStreams / 1e6).toFixed(0)} MB`, met: rssWithStreams <= 400e6 });
    return;
  }

  // Memory: the server's RSS with 1,000 idle streams open, against none.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const before = server.rss();
  const idle = await Promise.all(Array.from({ length: setup.idleStreams }, () => follow(setup, () => undefined)));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const after = server.rss();
  for (const follower of idle) follower.close();
  const perStream = (after - before) / setup.idleStreams;
  report.add({
    id: "sse-idle-memory",
    scenario: `${setup.idleStreams} idle SSE streams open`,
    rssMb: after / 1e6,
    note: `+${((after - before) / 1e6).toFixed(1)} MB over none, ${(perStream / 1024).toFixed(1)} KB a stream`,
  });
}
