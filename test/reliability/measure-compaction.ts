/**
 * Measures what a request waits for while a datafile of 100k cards is compacted: NeDB's
 * own compaction (one synchronous pass inside its queue) against the store's sliced one.
 * Prints figures; not a test (timing on a shared machine would make a flaky one).
 *
 *   npx tsx test/reliability/measure-compaction.ts [cards]
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Nedb from "@seald-io/nedb";
import { openNedbStore } from "../../src/store/nedb-store.js";
import type { StoredCard, Tree } from "../../src/shared/records.js";

const CARDS = Number(process.argv[2] ?? 100_000);
const treeId = "t".repeat(24);

function card(i: number): StoredCard {
  const at = new Date().toISOString();
  return {
    _id: `c${String(i).padStart(23, "0")}`,
    treeId,
    parentId: null,
    content: `Card ${i}: ${"lorem ipsum dolor sit amet ".repeat(4)}`,
    position: i,
    createdAt: at,
    updatedAt: at,
  };
}

/** Runs `compaction` while a reader asks for one card every 2 ms; returns the worst waits. */
async function underReads(read: () => Promise<unknown>, compaction: () => Promise<unknown>) {
  const waits: number[] = [];
  let lag = 0;
  let running = true;
  const reader = (async () => {
    while (running) {
      const t = performance.now();
      await read();
      waits.push(performance.now() - t);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  let expected = performance.now() + 5;
  const ticker = setInterval(() => {
    lag = Math.max(lag, performance.now() - expected);
    expected = performance.now() + 5;
  }, 5);
  const t = performance.now();
  await compaction();
  const total = performance.now() - t;
  running = false;
  await reader;
  clearInterval(ticker);
  waits.sort((a, b) => b - a);
  return { totalMs: total.toFixed(0), worstReadMs: waits[0]?.toFixed(1), p99ReadMs: waits[Math.floor(waits.length / 100)]?.toFixed(1), reads: waits.length, eventLoopLagMs: lag.toFixed(1) };
}

const dir = await mkdtemp(path.join(os.tmpdir(), "cardtree-measure-"));
try {
  const store = await openNedbStore(dir, { log: () => undefined });
  // Written as the domain writes them: a tree's creation, then imports of 5,000 cards.
  const at = new Date().toISOString();
  let tree: Tree = { _id: treeId, __v: 0, revision: 0, name: "Measured", owner: "o".repeat(24), users: ["o".repeat(24)], createdAt: at, updatedAt: at };
  for (let i = 0; i < CARDS; i += 5000) {
    const after = Array.from({ length: Math.min(5000, CARDS - i) }, (_, j) => ({ ...card(i + j), __v: 0 }));
    const revision = (tree.revision ?? 0) + 1;
    const next = { ...tree, revision };
    const kind = revision === 1 ? "tree.create" : "import";
    await store.changes.commit({ treeId, revision, at, userId: tree.owner, kind, before: [], after, ...(revision === 1 ? { tree: { before: null, after: next } } : {}) }, next);
    tree = next;
  }
  const probe = `c${String(Math.floor(CARDS / 2)).padStart(23, "0")}`;
  const ours = await underReads(() => store.cards.liveById(probe), async () => {
    const stats = await store.compactNow();
    console.log("sliced compaction (cards.db):", {
      records: stats.cards.records,
      queueHeldMs: stats.cards.queueHeldMs.toFixed(1),
      longestSliceMs: stats.cards.longestSliceMs.toFixed(1),
    });
  });
  console.log(`sliced compaction, ${CARDS} cards, a read every 2 ms:`, ours);
  await store.close();

  // NeDB's own class (nedb-promises wraps it), through its public API.
  const raw = new Nedb({ filename: path.join(dir, "cards.db") });
  await raw.loadDatabaseAsync();
  const theirs = await underReads(() => raw.findOneAsync({ _id: probe }), () => raw.compactDatafileAsync());
  console.log(`NeDB's own compaction, ${CARDS} cards, a read every 2 ms:`, theirs);
} finally {
  await rm(dir, { recursive: true, force: true });
}
