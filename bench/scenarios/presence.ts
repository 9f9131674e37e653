/**
 * Presence (issue 30): what a card write costs with nobody watching the tree's presence, and
 * with 200 watchers (20 collaborators with 10 tabs each, every tab with its presence stream
 * open and beating every 1.5 s as the browser client does, a tenth of them moving to another
 * card each beat), side by side in one run. Per write: the latency of sequential edits, and
 * the server's CPU time over the edits divided by their number, with the CPU the beats
 * alone cost over the same time subtracted (so the figure is what a write costs, not what
 * presence costs while nobody writes; that is reported on its own).
 */
import http from "node:http";
import { CardtreeClient } from "../cardtree-client.js";
import { cpuSeconds, type Pinned } from "../processes.js";
import { median, percentile, type Report } from "../report.js";

export interface PresenceSetup {
  report: Report;
  server: Pinned;
  owner: CardtreeClient;
  treeId: string;
  writes: number;
}

/** The server process's CPU time so far, in milliseconds. */
const cpuMs = (pid: number): number => cpuSeconds(pid) * 1000;

interface Watcher {
  client: CardtreeClient;
  tab: string;
  views: number;
  close(): void;
}

function watch(server: Pinned, client: CardtreeClient, treeId: string, tab: string): Promise<Watcher> {
  return new Promise((resolve, reject) => {
    const watcher: Watcher = { client, tab, views: 0, close: () => undefined };
    const req = http.get(`${server.url}/api/trees/${treeId}/presence?tab=${tab}`, { headers: { authorization: client.authorization } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`presence answered ${res.statusCode}`));
      res.setEncoding("utf8");
      // A stream reset on the loaded machine: counted out, the others go on.
      res.on("error", () => undefined);
      res.on("data", (chunk: string) => (watcher.views += chunk.split("event: presence").length - 1));
      watcher.close = () => req.destroy();
      resolve(watcher);
    });
    req.on("error", () => undefined);
  });
}

/**
 * One PUT on a kept-alive connection of the writer's own (node:http), so the writes never
 * share, or lose, a pooled connection with the watchers' beats (fetch's pool reset some on the
 * loaded machine).
 */
const writerAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function put(baseUrl: string, authorization: string, path: string, body: unknown): Promise<number> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${baseUrl}${path}`,
      { method: "PUT", agent: writerAgent, headers: { authorization, "content-type": "application/json", "content-length": Buffer.byteLength(payload) } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

async function edits(setup: PresenceSetup, cardId: string): Promise<{ latencies: number[]; cpuPerWriteMs: number; elapsedMs: number }> {
  const pid = setup.server.process.pid!;
  const latencies: number[] = [];
  const cpuBefore = cpuMs(pid);
  const started = performance.now();
  for (let i = 0; i < setup.writes; i++) {
    const t0 = performance.now();
    const edit = () => put(setup.server.url, setup.owner.authorization, `/api/trees/${setup.treeId}/cards/${cardId}`, { content: `Presence bench ${i}` });
    // A connection reset (seen on a machine at load 40): the edit once more.
    const status = await edit().catch(edit);
    if (status !== 200) throw new Error(`the edit answered ${status}`);
    latencies.push(performance.now() - t0);
  }
  const elapsedMs = performance.now() - started;
  return { latencies, cpuPerWriteMs: (cpuMs(pid) - cpuBefore) / setup.writes, elapsedMs };
}

export async function presenceScenarios(setup: PresenceSetup): Promise<void> {
  const { report, server, owner, treeId } = setup;
  const cards = await owner.json<{ _id: string }[]>("GET", `/api/trees/${treeId}/cards`);
  const edited = cards[0]!._id;

  // Warm-up, then nobody watching.
  await edits({ ...setup, writes: Math.min(50, setup.writes) }, edited);
  const alone = await edits(setup, edited);

  // 200 watchers: 20 collaborators, 10 tabs each.
  const watchers: Watcher[] = [];
  for (let u = 0; u < 20; u++) {
    const client = await CardtreeClient.signUp(server.url, `watcher${u}@presence.bench.example`);
    const res = await owner.request("POST", `/api/trees/${treeId}/collaborators`, { email: client.email });
    if (res.status !== 201) throw new Error(`sharing answered ${res.status}`);
    for (let t = 0; t < 10; t++) watchers.push(await watch(server, client, treeId, `bench-${u}-${t}-tab`));
  }
  let beat = 0;
  let beatErrors = 0;
  const beatOnce = () =>
    Promise.all(
      watchers.map((w, i) =>
        w.client
          .request("PUT", `/api/trees/${treeId}/presence`, { tab: w.tab, cardId: cards[(i + (i % 10 === beat % 10 ? beat : 0)) % cards.length]!._id, editing: false })
          .then((res) => res.arrayBuffer())
          // A beat lost (a connection reset on the loaded machine) is made up by the next, as in the client.
          .catch(() => beatErrors++),
      ),
    ).then(() => beat++);
  await beatOnce();
  const beats = setInterval(() => void beatOnce(), 1500);
  await new Promise((resolve) => setTimeout(resolve, 3000));

  // What the beats alone cost, over as long as the edits will take.
  const pid = server.process.pid!;
  const idleCpu = cpuMs(pid);
  const idleStart = performance.now();
  await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, Math.max(3000, alone.elapsedMs))));
  const beatCpuPerSecond = ((cpuMs(pid) - idleCpu) / (performance.now() - idleStart)) * 1000;

  const watched = await edits(setup, edited);
  clearInterval(beats);
  const viewsSeen = watchers.reduce((sum, w) => sum + w.views, 0);
  for (const w of watchers) w.close();

  const beatCpuDuringEdits = (beatCpuPerSecond * watched.elapsedMs) / 1000 / setup.writes;
  const rows = [
    { id: "presence-write-0", label: "no presence watchers", run: alone, cpu: alone.cpuPerWriteMs },
    { id: "presence-write-200", label: "200 presence watchers beating", run: watched, cpu: Math.max(0, watched.cpuPerWriteMs - beatCpuDuringEdits) },
  ];
  for (const row of rows) {
    report.add({
      id: row.id,
      scenario: `Card write with ${row.label}`,
      p50Ms: median(row.run.latencies),
      p99Ms: percentile(row.run.latencies, 99),
      note: `${setup.writes} sequential edits; server CPU ${row.cpu.toFixed(2)} ms a write${row.id.endsWith("200") ? ` (beats' own CPU, ${beatCpuPerSecond.toFixed(0)} ms/s, subtracted)` : ""}`,
    });
  }
  report.add({
    id: "presence-beats-200",
    scenario: "200 presence watchers beating every 1.5 s, nobody writing",
    note: `server CPU ${beatCpuPerSecond.toFixed(0)} ms a second (${((beatCpuPerSecond / 1000) * 100).toFixed(1)}% of a core); ${viewsSeen} views delivered in all`,
    errors: beatErrors,
  });
  report.target({
    name: "Card write with 200 presence watchers vs none (server CPU a write)",
    wanted: "no more than with none (within noise: +10%)",
    measured: `${rows[1]!.cpu.toFixed(2)} ms vs ${rows[0]!.cpu.toFixed(2)} ms; p50 ${median(watched.latencies).toFixed(1)} vs ${median(alone.latencies).toFixed(1)} ms`,
    met: rows[1]!.cpu <= rows[0]!.cpu * 1.1,
  });
}
