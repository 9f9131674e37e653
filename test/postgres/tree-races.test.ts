/**
 * Writes racing for one tree's revisions across processes (issue 17; src/domain/tree-races.ts).
 * Two domain contexts on one PostgreSQL database stand for two server processes: each has
 * its own connection pool, its own write queue per tree, its own pool of lock connections
 * and its own notice connection, as two `npm start` processes have. A write that loses its
 * revision to the other is tried again, and the tree is then contended in both (the loser
 * tells the other): their writes to it take turns on a lock the database holds, and none
 * loses any more.
 *
 * The losses are counted where they happen: the store refusing a commit whose revision the
 * other side took first.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCard } from "../../src/domain/cards.js";
import { execute } from "../../src/domain/command.js";
import type { DomainContext } from "../../src/domain/context.js";
import type { Actor } from "../../src/domain/policy.js";
import { createTree, deleteTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { RevisionTakenError } from "../../src/shared/errors.js";
import { RunAgainError } from "../../src/domain/durability.js";
import type { PostgresStore } from "../../src/store/postgres-store.js";
import { DomainProcesses } from "../helpers/domain-processes.js";
import { adminQuery, createTestDatabase, dropTestDatabase, withDatabase } from "../helpers/postgres.js";

let url: string;
let processes: DomainProcesses;
/** Commits refused because the other side took the revision first, both sides. */
let lost = 0;
/** The same, by process. */
const lostBy = new Map<DomainContext, number>();
/** When set, the next commit of that process says it has come, then waits for the release. */
const holdNextCommit = new Map<DomainContext, { reached: () => void; released: Promise<void> }>();

/** Holds `ctx`'s next commit: `reached` resolves once the commit waits, `release` lets it go. */
function holdCommit(ctx: DomainContext): { reached: Promise<void>; release: () => void } {
  let release!: () => void;
  let reached!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const arrived = new Promise<void>((resolve) => (reached = resolve));
  holdNextCommit.set(ctx, { reached, released });
  return { reached: arrived, release };
}

/**
 * A process of its own (test/helpers/domain-processes.ts), whose commits can be held and whose
 * lost races are counted: a commit refused as taken, or a change handed over ahead of its commit
 * (kept-reads.ts) that is then refused for it.
 */
function startProcess(): Promise<DomainContext> {
  return processes.start((store, self) => {
    const losing = (err: unknown) => {
      if (err instanceof RevisionTakenError || (err instanceof RunAgainError && err.lostRace)) {
        lost++;
        lostBy.set(self(), (lostBy.get(self()) ?? 0) + 1);
      }
    };
    const held = async () => {
      const hold = holdNextCommit.get(self());
      holdNextCommit.delete(self());
      if (hold) {
        hold.reached();
        await hold.released;
      }
    };
    return {
      ...store,
      changes: {
        ...store.changes,
        commit: async (...args: Parameters<PostgresStore["changes"]["commit"]>) => {
          await held();
          try {
            return await store.changes.commit(...args);
          } catch (err) {
            losing(err);
            throw err;
          }
        },
        commitEarly: async (...args: Parameters<NonNullable<PostgresStore["changes"]["commitEarly"]>>) => {
          await held();
          try {
            const { durable } = await store.changes.commitEarly!(...args);
            durable.catch(losing);
            return { durable };
          } catch (err) {
            losing(err);
            throw err;
          }
        },
      },
    };
  });
}

let a: DomainContext;
let b: DomainContext;
let owner: Actor;

beforeAll(async () => {
  url = await createTestDatabase();
  processes = new DomainProcesses(url);
  a = await startProcess();
  b = await startProcess();
  owner = await execute(a, null, signUp, {}, { email: "racer@example.com", password: "correct horse battery" });
});

afterAll(async () => {
  await processes?.close();
  if (url) await dropTestDatabase(url);
});

/** `count` card creations at once, alternating between the two processes; every one must land. */
async function race(treeId: string, count: number, label: string): Promise<void> {
  const made = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      execute(i % 2 === 0 ? a : b, owner, createCard, { treeId }, { treeId, content: `${label} ${i}`, position: i }),
    ),
  );
  expect(made.map((card) => card.content).sort()).toEqual(Array.from({ length: count }, (_, i) => `${label} ${i}`).sort());
}

describe("two processes writing one tree at once", { timeout: 60_000 }, () => {
  it("a race lost in one process makes the tree contended in the other, which won it", async () => {
    const tree = await execute(a, owner, createTree, {}, { name: "Told" });
    // A reads the tree and builds its change; B commits the revision meanwhile; then A commits.
    const held = holdCommit(a);
    const fromA = execute(a, owner, createCard, { treeId: tree._id }, { treeId: tree._id, content: "from A", position: 0 });
    await held.reached;
    const fromB = await execute(b, owner, createCard, { treeId: tree._id }, { treeId: tree._id, content: "from B", position: 1 });
    held.release();
    expect((await fromA).content).toBe("from A");
    expect(fromB.content).toBe("from B");
    expect(lostBy.get(a)).toBe(1);
    expect(lostBy.get(b) ?? 0).toBe(0);
    expect(a.treeRaces.contended(tree._id)).toBe(true);
    // B never lost, and still locks its writes to the tree once A's word arrives.
    const deadline = Date.now() + 5_000;
    while (!b.treeRaces.contended(tree._id) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(b.treeRaces.contended(tree._id)).toBe(true);
  });

  it("race until each has lost once, then take turns: every write lands and none loses again", async () => {
    const tree = await execute(a, owner, createTree, {}, { name: "Raced" });
    // Until a race was lost and the loser's word reached the other (usually the first round).
    for (let round = 1; !(a.treeRaces.contended(tree._id) && b.treeRaces.contended(tree._id)); round++) {
      if (round > 10) throw new Error(`ten rounds of racing writes and the tree still not contended in both (${lost} lost)`);
      await race(tree._id, 20, `warm-up ${round}`);
    }
    expect(lost).toBeGreaterThan(0);
    const before = lost;
    await race(tree._id, 60, "taking turns");
    expect(lost - before).toBe(0);
    // One change a write, revisions without a gap.
    const { rows } = await adminQuery(`SELECT revision FROM changes WHERE tree_id = '${tree._id}' ORDER BY revision`, withDatabase(url, new URL(url).pathname.slice(1)));
    expect(rows.map((row) => row.revision)).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1));
  });

  it("a tree deleted in one process while the other writes to it stays deleted: the write is refused, nothing comes back", async () => {
    const tree = await execute(a, owner, createTree, {}, { name: "Deleted meanwhile" });
    await execute(a, owner, createCard, { treeId: tree._id }, { treeId: tree._id, content: "before", position: 0 });
    // A reads the tree and builds its change; B deletes the tree meanwhile; then A commits.
    const held = holdCommit(a);
    const fromA = execute(a, owner, createCard, { treeId: tree._id }, { treeId: tree._id, content: "from A", position: 1 }).then(
      (card) => ({ card }),
      (error: unknown) => ({ error }),
    );
    await held.reached;
    await execute(b, owner, deleteTree, { treeId: tree._id }, undefined);
    held.release();
    const outcome = await fromA;
    expect("error" in outcome, JSON.stringify(outcome)).toBe(true);
    expect((outcome as { error: { code?: string } }).error.code).toBe("not_found");
    const database = withDatabase(url, new URL(url).pathname.slice(1));
    for (const table of ["trees WHERE id", "cards WHERE tree_id", "changes WHERE tree_id"]) {
      const { rows } = await adminQuery(`SELECT count(*)::int AS n FROM ${table} = '${tree._id}'`, database);
      expect(rows[0].n, table).toBe(0);
    }
  });
});
