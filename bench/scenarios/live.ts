/**
 * Live streams (issue 14): how long from a write sent until every one of 200 readers following
 * the tree over SSE has its event, and what 1,000 idle streams cost the server in memory.
 * The readers are raw HTTP connections from this process (on the load core); an event
 * counts as arrived when its `id:` line is read.
 *
 * With many readers (issue 27: 10,000) this process cannot read every socket on every
 * event without itself becoming what is measured: reading 10,000 sockets in JavaScript
 * takes it longer than the server takes to write them. So only a sample is read while the
 * edits are timed: every `SAMPLE_EVERY`th stream and the last `TAIL` opened (the server
 * writes a change to its streams in the order they were opened, so the tail holds the last
 * to be written); the others are paused (their bytes wait in the kernel) and are read
 * after the timed rounds, when each must have every revision, in order, once. (A paused
 * response of node's HTTP client is still read from its socket, into its buffer, so the
 * unread ones are bare sockets: `openUnread`.)
 */
import http from "node:http";
import net from "node:net";
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

/** Up to this many streams, all are read as the edits are timed. */
const READ_ALL_UP_TO = 1000;
const SAMPLE_EVERY = 20;
const TAIL = 100;

interface Follower {
  /** Revisions seen so far, with when, in the order they came. */
  seen: Map<number, number>;
  /** Revisions seen more than once or out of order. */
  disorder: number;
  /** Starts (again) reading what the server sent. */
  read(): void;
  close(): void;
}

/**
 * Opens an event stream on a bare socket and reads it only when asked: until `read()`,
 * the socket is not read at all (paused with a one-byte high-water mark, libuv stops
 * reading it after the response's head), so the events wait in the kernel and cost this
 * process nothing. `onEvent` gets each revision read, with when.
 */
export function openUnread(url: string, headers: Record<string, string>, onEvent: (revision: number, at: number) => void): Promise<{ read(): void; close(): void }> {
  const { hostname, port, pathname, search } = new URL(url);
  return new Promise((resolve, reject) => {
    // node hands a socket's options on to its stream (the types do not list this one).
    const socket = net.connect({ host: hostname, port: Number(port), readableHighWaterMark: 1 } as net.NetConnectOpts);
    let text = "";
    let head = true;
    socket.setEncoding("latin1");
    socket.on("error", reject);
    socket.on("data", (chunk: string) => {
      text += chunk;
      if (head) {
        const end = text.indexOf("\r\n\r\n");
        if (end < 0) return;
        if (!text.startsWith("HTTP/1.1 200 ")) return reject(new Error(`events answered ${text.slice(0, 40)}`));
        head = false;
        text = text.slice(end + 4);
        socket.pause();
        resolve({ read: () => socket.resume(), close: () => socket.destroy() });
      }
      // Chunk-size lines sit between events; an event's `id:` line is whole within its chunk.
      const end = text.lastIndexOf("\n\n");
      if (end < 0) return;
      for (const match of text.slice(0, end).matchAll(/^id: (\d+)$/gm)) onEvent(Number(match[1]), performance.now());
      text = text.slice(end + 2);
    });
    const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("");
    socket.write(`GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${lines}\r\n`);
  });
}

function follow(setup: LiveSetup, sampled: boolean, onEvent: (revision: number) => void): Promise<Follower> {
  const seen = new Map<number, number>();
  const url = `${setup.server.url}/api/trees/${setup.treeId}/events`;
  const headers = { authorization: setup.writer.authorization };
  const follower: Follower = { seen, disorder: 0, read: () => undefined, close: () => undefined };
  let last = -1;
  const heard = (revision: number, at: number) => {
    if (seen.has(revision) || revision < last) follower.disorder++;
    last = revision;
    seen.set(revision, at);
    if (sampled) onEvent(revision);
  };
  // Not sampled: nothing is read until the timed rounds are over.
  if (!sampled) return openUnread(url, headers, heard).then((socket) => Object.assign(follower, socket));
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`events answered ${res.statusCode}`));
      let buffer = "";
      follower.close = () => req.destroy();
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const id = /^id: (\d+)$/m.exec(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (id) heard(Number(id[1]), performance.now());
        }
      });
      resolve(follower);
    });
    req.on("error", () => undefined);
  });
}

export async function liveScenarios(setup: LiveSetup): Promise<void> {
  const { report, server, writer, treeId } = setup;
  const [card] = await writer.json<{ _id: string }[]>("GET", `/api/trees/${treeId}/cards`);

  // Fan-out: every round, one edit; the time from the request being sent to the last
  // sampled reader's event (and, in the note, from its 200: the server writes a change to
  // its streams before it answers the write, so with many streams the 200 comes last and
  // that figure is 0). The readers that have the round's revision are counted as their
  // events arrive (checking every reader on each event cost this process O(readers^2)).
  let waiting: ((revision: number) => void) | null = null;
  const readAll = setup.streams <= READ_ALL_UP_TO;
  const isSampled = (index: number) => readAll || index % SAMPLE_EVERY === 0 || index >= setup.streams - TAIL;
  // Opened in batches: 10,000 connections at once would overrun the listen backlog. The
  // tail is a batch of its own, opened once every other stream is.
  const followers: Follower[] = [];
  const batches: number[] = [];
  for (let left = setup.streams - (readAll ? 0 : TAIL); left > 0; left -= 500) batches.push(Math.min(500, left));
  if (!readAll) batches.push(TAIL);
  for (const batch of batches) {
    const start = followers.length;
    followers.push(
      ...(await Promise.all(Array.from({ length: batch }, (_, i) => follow(setup, isSampled(start + i), (revision) => waiting?.(revision))))),
    );
  }
  const sample = followers.filter((_, index) => isSampled(index));
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const rssWithStreams = server.rss();
  const delays: number[] = [];
  const fromSent: number[] = [];
  const trees = await writer.json<{ _id: string; revision: number }[]>("GET", "/api/trees");
  const first = trees.find((t) => t._id === treeId)!.revision + 1;
  let target = first - 1;
  for (let round = 0; round < setup.rounds; round++) {
    const sentAt = performance.now();
    const res = await writer.request("PUT", `/api/trees/${treeId}/cards/${card._id}`, { content: `Live ${round}` });
    const answeredAt = performance.now();
    if (res.status !== 200) throw new Error(`the edit answered ${res.status}`);
    await res.arrayBuffer();
    // Nobody else writes this tree meanwhile: each edit is the next revision.
    target++;
    await new Promise<void>((resolve) => {
      let arrived = sample.filter((f) => f.seen.has(target)).length;
      const done = () => {
        if (arrived < sample.length) return;
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
    const last = Math.max(...sample.map((f) => f.seen.get(target)!));
    delays.push(Math.max(0, last - answeredAt));
    fromSent.push(last - sentAt);
  }
  // Every stream, sampled or not, must now have had each edit once, in order.
  for (const follower of followers) follower.read();
  const deadline = performance.now() + 60_000;
  while (followers.some((f) => !f.seen.has(target)) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  const incomplete = followers.filter((f) => {
    for (let revision = first; revision <= target; revision++) if (!f.seen.has(revision)) return true;
    return f.disorder > 0;
  }).length;
  if (incomplete > 0) throw new Error(`${incomplete} of ${followers.length} streams missed, repeated or reordered an edit`);
  for (const follower of followers) follower.close();
  delays.sort((a, b) => a - b);
  fromSent.sort((a, b) => a - b);
  const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
  const p99 = percentile(fromSent, 0.99);
  const fanout = setup.fanout ?? { id: "sse-fanout", p99TargetMs: 100 };
  report.add({
    id: fanout.id,
    scenario: `SSE fan-out: ${setup.streams} streams on one tree, a write sent to the last stream's event`,
    p50Ms: median(fromSent),
    p99Ms: p99,
    rssMb: rssWithStreams / 1e6,
    note:
      `${setup.rounds} edits, one at a time; RSS with the streams open; ` +
      `${readAll ? "every stream read" : `${sample.length} streams read as timed, all checked after`}; ` +
      `from the write's 200: p50 ${median(delays).toFixed(1)} ms, p99 ${percentile(delays, 0.99).toFixed(1)} ms`,
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
  const idle = await Promise.all(Array.from({ length: setup.idleStreams }, () => follow(setup, true, () => undefined)));
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
