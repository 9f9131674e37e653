/**
 * Writes racing for one tree's revisions across processes (issue 17; src/domain/tree-races.ts).
 * Two domain contexts on one PostgreSQL database stand for two server processes: each has
 * its own connection pool, its own write queue per tree and its own pool of lock
 * connections, as two `npm start` processes have. A write that loses its revision to the
 * other is tried again; once each side has lost once, their writes to that tree take turns
 * on a lock the database holds, and none loses any more.
 *
 * The losses are counted where they happen: the store refusing a commit whose revision the
 * other side took first.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import { loadConfig } from "../../src/config.js";
import { createCard } from "../../src/domain/cards.js";
import { execute } from "../../src/domain/command.js";
import { createDomainContext, type DomainContext } from "../../src/domain/context.js";
import type { Actor } from "../../src/domain/policy.js";
import { createTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import { RevisionTakenError } from "../../src/shared/errors.js";
import { PostgresLocks } from "../../src/store/postgres/locks.js";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres-store.js";
import { adminQuery, createTestDatabase, dropTestDatabase, withDatabase } from "../helpers/postgres.js";

const quiet = { log: () => undefined };
let url: string;
const stores: PostgresStore[] = [];
const locks: PostgresLocks[] = [];
/** Commits refused because the other side took the revision first. */
let lost = 0;

/** A process of its own: a store pool, a domain context, lock connections. */
async function startProcess(): Promise<DomainContext> {
  const store = await openPostgresStore(url, quiet);
  stores.push(store);
  const counted = {
    ...store,
    changes: {
      ...store.changes,
      commit: async (...args: Parameters<PostgresStore["changes"]["commit"]>) => {
        try {
          return await store.changes.commit(...args);
        } catch (err) {
          if (err instanceof RevisionTakenError) lost++;
          throw err;
        }
      },
    },
  };
  const treeLocks = new PostgresLocks(url, { name: "cardtree-test-tree-locks" });
  locks.push(treeLocks);
  const config = loadConfig({ SIGNUP: "open", EXPORT_WORKERS: "0", STORE: "postgres", DATABASE_URL: url });
  return createDomainContext(counted, config, {
    formats: formatsOffThread(config.exports),
    hasher: scryptHasherFor(config.limits),
    shared: { treeLocks },
  });
}

let a: DomainContext;
let b: DomainContext;
let owner: Actor;

beforeAll(async () => {
  url = await createTestDatabase();
  a = await startProcess();
  b = await startProcess();
  owner = await execute(a, null, signUp, {}, { email: "racer@example.com", password: "correct horse battery" });
});

afterAll(async () => {
  for (const lock of locks) await lock.close();
  for (const store of stores) await store.close();
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
  it("race until each has lost once, then take turns: every write lands and none loses again", async () => {
    const tree = await execute(a, owner, createTree, {}, { name: "Raced" });
    // Until both sides have lost a race on the tree (usually the first round).
    for (let round = 1; !(a.treeRaces.contended(tree._id) && b.treeRaces.contended(tree._id)); round++) {
      if (round > 10) throw new Error(`ten rounds of racing writes and still not both contended (${lost} lost)`);
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
});
