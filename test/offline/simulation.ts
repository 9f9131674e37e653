/**
 * The "nothing lost" simulation (issue 26, design/offline.md rule 8), in the manner of
 * FoundationDB's deterministic simulation testing: one seed chooses every writer's operation
 * and every fault, so a failing run is named by its seed and run again with it. (The servers
 * and the network answer in their own time, so a seed fixes what is done, not the exact
 * interleaving of answers.)
 *
 * Several simulated browsers (SimDevice), each with a tab running the client's real sync code
 * (sim-client.ts) — one browser with two tabs of the tree — write on one shared tree, as two
 * users, against real servers (two processes on PostgreSQL, or one on the embedded store).
 * Faults: devices going offline and back, answers dropped after the server committed, tabs
 * killed (their outbox kept and adopted by the next tab), a server killed with SIGKILL and
 * started again. At the end, with every device online:
 * - every change a tab accepted (in its outbox) is on the server, or kept as a version of
 *   its card (a card deleted since by someone else keeps its versions);
 * - every tab's tree equals the server's;
 * - nothing was applied twice: no text written once is in two cards, no outbox keeps anything.
 */
import { seededRandom } from "../helpers/seeded-random.js";
import type { Card } from "../../src/shared/records.js";
import { Api, buildTree, buildUser, shareTree } from "../helpers/api.js";
import type { TestServer } from "../helpers/server.js";
import { SimDevice, SimTab, type Accepted, type SimNet } from "./sim-client.js";



export interface SimulationOptions {
  seed: number;
  /** Simulated browsers (one of them gets a second tab). */
  devices: number;
  /** Writer operations and faults, in all. */
  steps: number;
  /** The servers; a killed one is started again by `restart`. */
  servers: TestServer[];
  /** Chance an answer to a write is dropped after the server committed it. */
  dropRate?: number;
  /** Chance per step of: a device going offline or back, a tab killed, a server killed. */
  offlineRate?: number;
  killTabRate?: number;
  killServerRate?: number;
  /** Cards the tree starts with. */
  cards?: number;
}

export interface SimulationReport {
  seed: number;
  accepted: number;
  edits: number;
  adds: number;
  moves: number;
  deletes: number;
  offlineWindows: number;
  droppedAnswers: number;
  tabKills: number;
  serverKills: number;
  conflictsKept: number;
  broughtBack: number;
  /**
   * Cards brought back whose original is still on the server at the end: the writer's words
   * twice over, or beside their card (a copy without the card, its create forgotten).
   */
  duplicates: number;
  /** Creates answered and kept in the outbox that a tab opened from an older copy put back (sync.ts keepAnswered). */
  createsPutBack: number;
  /** Edits of cards a tab's tree as loaded lacked, sent for the server to say whether it has the card (replay.ts, standIn). */
  editsStoodIn: number;
  /** Cards made or moved under a card brought back that went under it (SyncQueue.follow). */
  followers: number;
  /** Moves refused as cycles (two writers moving cards under each other): the card went back, its text kept. */
  movesRefused: number;
  /** Edits withdrawn by their own writer: the card deleted on the same device before the edit went. */
  withdrawn: number;
  finalCards: number;
  /** From the last fault healed (all online, servers up) to every tab settled. */
  settleMs: number;
  problems: string[];
  /** The servers at the end (a killed one was replaced by its restart). */
  servers: TestServer[];
}

export async function runSimulation(options: SimulationOptions): Promise<SimulationReport> {
  const rng = seededRandom(options.seed);
  const pick = <T>(items: T[]): T => items[Math.floor(rng() * items.length)];
  const servers: (TestServer | null)[] = [...options.servers];
  const offline = new Set<SimDevice>();
  const report: SimulationReport = {
    seed: options.seed,
    accepted: 0,
    edits: 0,
    adds: 0,
    moves: 0,
    deletes: 0,
    offlineWindows: 0,
    droppedAnswers: 0,
    tabKills: 0,
    serverKills: 0,
    conflictsKept: 0,
    broughtBack: 0,
    duplicates: 0,
    createsPutBack: 0,
    editsStoodIn: 0,
    followers: 0,
    movesRefused: 0,
    withdrawn: 0,
    finalCards: 0,
    settleMs: 0,
    problems: [],
    servers: [],
  };
  const dropRate = options.dropRate ?? 0.1;
  const net: SimNet = {
    server: () => {
      const up = servers.filter((s): s is TestServer => s !== null);
      return up.length === 0 ? null : up[Math.floor(Math.random() * up.length)].url;
    },
    online: (device) => !offline.has(device),
    dropAnswer: () => {
      // Chosen by Math.random: how many answers there are depends on timing, not on the seed.
      const drop = Math.random() < dropRate;
      if (drop) report.droppedAnswers++;
      return drop;
    },
  };

  const url = options.servers[0].url;
  const owner = await buildUser(url, "sim-owner");
  const friend = await buildUser(url, "sim-friend");
  const start = Array.from({ length: options.cards ?? 12 }, (_, i) => ({ content: `card ${i}`, children: [{ content: `child ${i}` }] }));
  const tree = await buildTree(owner, { name: "Simulated", seed: JSON.stringify(start) });
  await shareTree(owner, tree._id, friend);
  const users = [owner, friend];

  const devices = Array.from({ length: options.devices }, (_, i) => new SimDevice(`device ${i}`));
  const tabs: SimTab[] = [];
  const openTab = async (device: SimDevice, user: Api) => {
    const tab = new SimTab(device, tree._id, user.authHeader!, net);
    await tab.open();
    return tab;
  };
  const userOf = new Map<SimDevice, Api>();
  for (const [i, device] of devices.entries()) {
    userOf.set(device, users[i % users.length]);
    tabs.push(await openTab(device, users[i % users.length]));
  }
  tabs.push(await openTab(devices[0], users[0]));

  const accepted: (Accepted & { device: SimDevice })[] = [];
  /** Cards a writer deleted, and on which device: their own edits not sent yet go with them. */
  const deletedBy = new Map<string, Set<SimDevice>>();
  let counter = 0;
  const token = (tab: SimTab) => `t${devices.indexOf(tab.device)}x${++counter}`;

  const trace = (message: string) => {
    if (process.env.SIM_TRACE) console.error(`${new Date().toISOString().slice(14, 23)} SIM ${message}`);
  };
  for (let step = 0; step < options.steps; step++) {
    const roll = rng();
    const tab = pick(tabs);
    if (process.env.SIM_DEBUG) console.error(`step ${step} roll ${roll.toFixed(3)} ${tab.device.name} pending ${tab.sync.pending}`);
    const cards = tab.state.treeOrder().map((entry) => entry.card);
    const half = step === Math.floor(options.steps / 2);
    if (!half && roll < (options.offlineRate ?? 0.06)) {
      const device = pick(devices);
      trace(`${device.name} ${offline.has(device) ? "online" : "offline"}`);
      if (offline.has(device)) offline.delete(device);
      else {
        offline.add(device);
        report.offlineWindows++;
      }
    } else if (!half && roll < (options.offlineRate ?? 0.06) + (options.killTabRate ?? 0.03)) {
      report.tabKills++;
      trace(`kill tab of ${tab.device.name}`);
      tab.kill();
      tabs.splice(tabs.indexOf(tab), 1, await openTab(tab.device, userOf.get(tab.device)!));
    } else if (half || roll < (options.offlineRate ?? 0.06) + (options.killTabRate ?? 0.03) + (options.killServerRate ?? 0.01)) {
      // At least one server is killed in every run, half way.
      const index = Math.floor(rng() * servers.length);
      const server = servers[index];
      if (server) {
        report.serverKills++;
        trace(`kill server ${server.url}`);
        servers[index] = null;
        await server.kill();
        servers[index] = await server.restart();
      }
    } else if (roll < 0.2) {
      await tab.catchUp();
    } else if (roll < 0.55 && cards.length > 0) {
      accepted.push({ ...(await tab.edit(pick(cards), token(tab))), device: tab.device });
      trace(`${tab.device.name} edit ${accepted[accepted.length - 1].cardId} ${accepted[accepted.length - 1].token}`);
      report.edits++;
    } else if (roll < 0.8) {
      const parent = rng() < 0.3 || cards.length === 0 ? null : pick(cards)._id;
      accepted.push({ ...(await tab.add(parent, token(tab))), device: tab.device });
      trace(`${tab.device.name} add ${accepted[accepted.length - 1].cardId} under ${parent} ${accepted[accepted.length - 1].token}`);
      report.adds++;
    } else if (roll < 0.92 && cards.length > 1) {
      const card = pick(cards);
      const target = rng() < 0.3 ? null : pick(cards)._id;
      trace(`${tab.device.name} move ${card._id} under ${target}`);
      await tab.move(card, target);
      report.moves++;
    } else if (cards.length > 4) {
      // Small subtrees only, so the tree keeps something to write on.
      const small = cards.filter((card) => tab.state.descendants(card._id).length <= 3);
      if (small.length > 0) {
        const victim = pick(small);
        trace(`${tab.device.name} delete ${victim._id}`);
        for (const id of await tab.delete(victim)) deletedBy.set(id, (deletedBy.get(id) ?? new Set()).add(tab.device));
        report.deletes++;
      }
    }
    // Let the queues, in flight meanwhile, move on a little.
    await new Promise((resolve) => setTimeout(resolve, Math.floor(rng() * 4)));
  }

  // Every fault heals: all online, every server up. Then everything waiting must get through.
  offline.clear();
  const healed = Date.now();
  const deadline = healed + 120_000;
  if (process.env.SIM_DEBUG) console.error("settling");
  for (let round = 0; round < 5; round++) {
    for (const tab of tabs) await tab.settle(deadline);
    for (const tab of tabs) await tab.catchUp();
    if (tabs.every((tab) => tab.sync.pending === 0)) break;
  }
  for (const tab of tabs) await tab.settle(deadline);
  for (const tab of tabs) await tab.catchUp();
  report.settleMs = Date.now() - healed;
  report.accepted = accepted.length;
  report.conflictsKept = tabs.reduce((sum, tab) => sum + tab.conflicts, 0);
  report.broughtBack = tabs.reduce((sum, tab) => sum + tab.broughtBack, 0);
  report.createsPutBack = tabs.reduce((sum, tab) => sum + tab.createsPutBack, 0);
  report.editsStoodIn = tabs.reduce((sum, tab) => sum + tab.editsStoodIn, 0);
  report.followers = tabs.reduce((sum, tab) => sum + tab.followers, 0);
  report.movesRefused = tabs.reduce((sum, tab) => sum + tab.movesRefused, 0);

  // The checks, through a server up now (a killed one came back on another port).
  const problems = report.problems;
  const reader = new Api(net.server()!, owner.credentials);
  const server = (await reader.get(`/api/trees/${tree._id}/cards`)).body as Card[];
  report.finalCards = server.length;
  const shape = (cards: Card[]) =>
    cards
      .map((card) => `${card._id}|${card.parentId}|${card.position}|${JSON.stringify(card.content)}`)
      .sort()
      .join("\n");
  const expected = shape(server);
  for (const tab of tabs) {
    const mine = shape(tab.state.treeOrder().map((entry) => entry.card));
    if (mine !== expected) problems.push(`${tab.device.name}'s tree differs from the server's:\n${diffLines(expected, mine)}`);
  }
  for (const device of devices) {
    const left = await device.store.entries();
    if (left.length > 0) problems.push(`${device.name} still keeps ${left.length} outbox entries`);
  }
  const holders = new Map<string, string[]>();
  for (const card of server) {
    for (const word of card.content.split(/\s+/)) {
      if (!/^t\d+x\d+$/.test(word)) continue;
      const list = holders.get(word) ?? [];
      if (!list.includes(card._id)) list.push(card._id);
      holders.set(word, list);
    }
  }
  // A token is written into one card. It is in more only when a later edit of that card came
  // back as a new card after someone deleted it (its text carries the earlier words along).
  const broughtBackIds = new Set(devices.flatMap((d) => [...d.cameBack.values()].flat()));
  const onServer = new Set(server.map((card) => card._id));
  for (const device of devices) for (const [original, backs] of device.cameBack) if (onServer.has(original)) report.duplicates += backs.filter((id) => onServer.has(id)).length;
  for (const [word, ids] of holders) {
    const originals = ids.filter((id) => !broughtBackIds.has(id));
    if (originals.length > 1) problems.push(`${word} is in ${originals.length} cards (${originals.join(", ")}): applied twice?`);
  }
  const versionsOf = new Map<string, string[]>();
  const versions = async (cardId: string) => {
    let list = versionsOf.get(cardId);
    if (!list) {
      const res = await reader.get(`/api/trees/${tree._id}/cards/${cardId}/versions?limit=500`);
      list = res.status === 200 ? (res.body as { content: string }[]).map((v) => v.content) : [];
      versionsOf.set(cardId, list);
    }
    return list;
  };
  for (const change of accepted) {
    if (holders.has(change.token)) continue;
    // The card, and every card that came back for it, or for one of those, on any device
    // (several devices, or tabs, may each bring back their own edit of one deleted card).
    const ids = [change.cardId];
    for (let i = 0; i < ids.length; i++) {
      for (const device of devices) for (const next of device.cameBack.get(ids[i]) ?? []) if (!ids.includes(next)) ids.push(next);
    }
    let kept = false;
    for (const id of ids) if ((await versions(id)).some((content) => content.split(/\s+/).includes(change.token))) kept = true;
    if (kept) continue;
    // The writer deleted the card themselves, on the same device, before the edit was sent.
    if (ids.some((id) => deletedBy.get(id)?.has(change.device))) {
      report.withdrawn++;
      continue;
    }
    problems.push(`${change.kind} ${change.token} (card ${ids.join(" → ")}) is nowhere: not in the tree, not in the card's versions`);
  }
  report.servers = servers.filter((s): s is TestServer => s !== null);
  return report;
}

function diffLines(expected: string, actual: string): string {
  const a = new Set(expected.split("\n"));
  const b = new Set(actual.split("\n"));
  const missing = [...a].filter((line) => !b.has(line)).slice(0, 5);
  const extra = [...b].filter((line) => !a.has(line)).slice(0, 5);
  return [...missing.map((line) => `  server only: ${line}`), ...extra.map((line) => `  tab only:    ${line}`)].join("\n");
}
