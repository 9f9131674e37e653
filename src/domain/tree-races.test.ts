/**
 * The bookkeeping of contended trees (tree-races.ts), with a clock the test moves: which
 * writes take the cross-process lock and for how long, who is told, and that trees no
 * longer contended are forgotten. The races themselves, across two processes on one
 * PostgreSQL database: test/postgres/tree-races.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Locks } from "./ports/locks.js";
import type { Peers } from "./ports/peers.js";
import { CONTENDED_MS, TreeRaces } from "./tree-races.js";

function setUp() {
  let clock = 1_000;
  const locked: string[] = [];
  const locks: Locks = {
    run: (key, work) => {
      locked.push(key);
      return work();
    },
  };
  const told: string[] = [];
  let hear: (treeId: string) => void = () => undefined;
  const peers = {
    treeContended: (treeId: string) => told.push(treeId),
    onTreeContended: (listener: (treeId: string) => void) => {
      hear = listener;
      return () => undefined;
    },
  } as Partial<Peers> as Peers;
  const races = new TreeRaces(locks, peers, () => clock);
  return {
    races,
    locked,
    told,
    hear: (treeId: string) => hear(treeId),
    advance: (ms: number) => (clock += ms),
  };
}

describe("TreeRaces", () => {
  it("locks a tree's writes from its first lost race until CONTENDED_MS after the last, and tells the others each time", async () => {
    const { races, locked, told, advance } = setUp();
    await races.attempt("t1", async () => undefined);
    expect(locked).toEqual([]);
    races.lost("t1");
    expect(told).toEqual(["t1"]);
    await races.attempt("t1", async () => undefined);
    await races.attempt("t2", async () => undefined);
    expect(locked).toEqual(["tree:t1"]);
    advance(CONTENDED_MS - 1);
    races.lost("t1");
    expect(told).toEqual(["t1", "t1"]);
    advance(CONTENDED_MS - 1);
    expect(races.contended("t1")).toBe(true);
    advance(1);
    expect(races.contended("t1")).toBe(false);
    await races.attempt("t1", async () => undefined);
    expect(locked).toEqual(["tree:t1"]);
  });

  it("locks a tree another process found contended, without telling anyone back", async () => {
    const { races, locked, told, hear } = setUp();
    hear("t1");
    await races.attempt("t1", async () => undefined);
    expect(locked).toEqual(["tree:t1"]);
    expect(told).toEqual([]);
  });

  it("forgets trees whose contention ended once it remembers a thousand", () => {
    const { races, advance } = setUp();
    for (let i = 0; i < 1_000; i++) races.lost(`t${i}`);
    expect(races.remembered).toBe(1_000);
    advance(CONTENDED_MS);
    races.lost("fresh");
    expect(races.remembered).toBe(1);
  });

  it("never locks without cross-process locks (one process alone)", async () => {
    const races = new TreeRaces();
    races.lost("t1");
    expect(races.contended("t1")).toBe(true);
    expect(await races.attempt("t1", async () => "ran")).toBe("ran");
  });
});
