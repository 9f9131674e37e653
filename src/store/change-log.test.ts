import { appendFileSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Change } from "../shared/changes.js";
import type { StoredCard, Tree } from "../shared/records.js";
import { ChangeLog, CHANGE_LOG } from "./change-log.js";

const quiet = () => {};
const tree = (id: string, revision: number): Tree => ({
  __v: 0,
  revision,
  _id: id,
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
  name: "t",
  owner: "a".repeat(24),
  users: ["a".repeat(24)],
});
const card = (id: string, content: string): StoredCard => ({
  _id: id,
  treeId: "t1",
  parentId: null,
  content,
  position: 0,
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
});
const change = (treeId: string, revision: number, at = "2026-01-01T00:00:00.000Z", cards = 1): Change => ({
  treeId,
  revision,
  at,
  userId: null,
  kind: "card.update",
  before: [],
  after: Array.from({ length: cards }, (_, i) => card(`c${i}`, `r${revision}`)),
});

async function logWith(build: (log: ChangeLog) => Promise<void>): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "cardtree-log-"));
  const log = await ChangeLog.open(dir, quiet);
  await build(log);
  await log.close();
  return dir;
}

describe("the change log", () => {
  it("reopens with what was applied, without aborted changes or deleted trees, and drops a torn tail", async () => {
    const dir = await logWith(async (log) => {
      for (const revision of [1, 2]) log.applied(await log.append(change("t1", revision), tree("t1", revision)));
      await log.abort(await log.append(change("t1", 3), tree("t1", 3)));
      log.applied(await log.append(change("t1", 3, undefined, 20), tree("t1", 3)));
      log.applied(await log.append(change("t2", 1), tree("t2", 1)));
      await log.treeRemoved("t2");
    });
    appendFileSync(path.join(dir, CHANGE_LOG), '{"t":"c","change":{"treeId":"t1","revi');
    const messages: string[] = [];
    const log = await ChangeLog.open(dir, (message) => messages.push(message));
    expect(messages).toEqual(["change log repaired after a crash: dropped an unfinished write"]);
    expect(log.entries("t1").map((e) => e.revision)).toEqual([1, 2, 3]);
    expect(log.entries("t1")[2].cardIds).toBeNull();
    expect(log.entries("t2")).toEqual([]);
    expect([...log.removedTrees]).toEqual(["t2"]);
    const [third] = await log.read([log.entries("t1")[2]]);
    expect(third.change.after).toHaveLength(20);
    await log.close();
  });

  it("compacts to the lines that count and prunes old changes but never a tree's latest", async () => {
    const dir = await logWith(async (log) => {
      for (let revision = 1; revision <= 50; revision++) {
        const at = `2026-01-01T00:00:${String(revision).padStart(2, "0")}.000Z`;
        log.applied(await log.append(change("t1", revision, at), tree("t1", revision)));
        log.applied(await log.append(change("t2", revision, at), tree("t2", revision)));
      }
      await log.treeRemoved("t2");
      const sizeBefore = statSync(log.file).size;
      await log.compact();
      expect(statSync(log.file).size).toBeLessThan(sizeBefore / 1.8);
      expect(await log.prune("2026-01-01T00:00:45.000Z")).toBe(44);
      expect(log.entries("t1").map((e) => e.revision)).toEqual([45, 46, 47, 48, 49, 50]);
      log.applied(await log.append(change("t1", 51), tree("t1", 51)));
    });
    const log = await ChangeLog.open(dir, quiet);
    expect(log.entries("t1").map((e) => e.revision)).toEqual([45, 46, 47, 48, 49, 50, 51]);
    expect((await log.read(log.entries("t1").slice(-1)))[0].change.revision).toBe(51);
    expect(readFileSync(log.file, "utf8")).toContain('"t":"removed","treeId":"t2"');
    await log.close();
  });

  it("keeps a keyed deletion's key in its line, across an open and a compaction, until the key is forgotten", async () => {
    const removal = { key: { userId: "u1", key: "k1", fingerprint: "f", step: 2 }, at: "2026-01-01T00:00:10.000Z", expiresAt: "2026-01-02T00:00:10.000Z" };
    const dir = await logWith(async (log) => {
      log.applied(await log.append(change("t1", 1), tree("t1", 1)));
      log.applied(await log.append(change("t2", 1), tree("t2", 1)));
      await log.treeRemoved("t1", removal);
      await log.treeRemoved("t2");
    });
    let log = await ChangeLog.open(dir, quiet);
    expect(log.keyedRemovals()).toEqual([{ treeId: "t1", removal }]);
    expect(log.keyedRemovals({ userId: "u1", key: "k1", since: removal.at })).toEqual([{ treeId: "t1", removal }]);
    expect(log.keyedRemovals({ userId: "u2", key: "k1", since: removal.at })).toEqual([]);
    expect(log.keyedRemovals({ userId: "u1", key: "k1", since: "2026-01-01T00:00:11.000Z" })).toEqual([]);
    await log.compact();
    await log.close();
    log = await ChangeLog.open(dir, quiet);
    expect(log.keyedRemovals()).toEqual([{ treeId: "t1", removal }]);
    expect([...log.removedTrees].sort()).toEqual(["t1", "t2"]);
    // Forgotten once its key expired: the next compaction keeps the deletion, not the key.
    log.forgetRemovalKeys(removal.expiresAt);
    expect(log.keyedRemovals()).toEqual([{ treeId: "t1", removal }]);
    log.forgetRemovalKeys("2026-01-02T00:00:11.000Z");
    expect(log.keyedRemovals()).toEqual([]);
    await log.compact();
    await log.close();
    log = await ChangeLog.open(dir, quiet);
    expect(log.keyedRemovals()).toEqual([]);
    expect([...log.removedTrees].sort()).toEqual(["t1", "t2"]);
    await log.close();
  });

  it("a tree made again with a deleted tree's id is not deleted at the next open, before or after a compaction, and keeps both deletions' keys", async () => {
    const first = { key: { userId: "u1", key: "k1", fingerprint: "f", step: 1 }, at: "2026-01-01T00:00:10.000Z", expiresAt: "2026-01-02T00:00:10.000Z" };
    const second = { key: { userId: "u1", key: "k2", fingerprint: "f", step: 1 }, at: "2026-01-01T00:00:20.000Z", expiresAt: "2026-01-02T00:00:20.000Z" };
    const dir = await logWith(async (log) => {
      log.applied(await log.append(change("t1", 1), tree("t1", 1)));
      log.applied(await log.append(change("t3", 1), tree("t3", 1)));
      await log.treeRemoved("t1", first);
      await log.treeRemoved("t3", second);
      // Made again with their ids (a client's own ids); t3 deleted a second time.
      log.applied(await log.append(change("t1", 1), tree("t1", 1)));
      log.applied(await log.append(change("t1", 2), tree("t1", 2)));
      log.applied(await log.append(change("t3", 1), tree("t3", 1)));
      expect(log.removedTrees.has("t1")).toBe(false);
      await log.treeRemoved("t3", { ...second, key: { ...second.key, key: "k3" } });
    });
    for (const compacted of [false, true]) {
      const log = await ChangeLog.open(dir, quiet);
      expect([...log.removedTrees]).toEqual(["t3"]);
      expect(log.entries("t1").map((e) => e.revision)).toEqual([1, 2]);
      expect(log.entries("t3")).toEqual([]);
      expect(log.keyedRemovals().map(({ treeId, removal }) => `${treeId} ${removal.key.key}`).sort()).toEqual(["t1 k1", "t3 k2", "t3 k3"]);
      if (!compacted) await log.compact();
      await log.close();
    }
  });

  it("reads the right changes while a compaction renames a new file in", async () => {
    await logWith(async (log) => {
      for (let revision = 1; revision <= 200; revision++) {
        log.applied(await log.append(change("t1", revision), tree("t1", revision)));
        log.applied(await log.append(change("t2", revision), tree("t2", revision)));
      }
      await log.treeRemoved("t2");
      const reads = Array.from({ length: 20 }, () => log.read(log.entries("t1")));
      const compaction = log.compact();
      const more = Array.from({ length: 20 }, () => log.read(log.entries("t1")));
      await compaction;
      for (const read of await Promise.all([...reads, ...more])) {
        expect(read.map((logged) => logged.change.revision)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      }
    });
  });

  it("opens lines longer than a read (1 MiB), wherever the next header falls on the edge between two reads, and drops a long torn line", async () => {
    const MiB = 1 << 20;
    const bigChange = (treeId: string, revision: number, bytes: number): Change => ({ ...change(treeId, revision), after: [card("big", "x".repeat(bytes))] });
    // How many bytes a line takes beyond its card's content (the content is plain ASCII).
    const probe = await logWith(async (log) => log.applied(await log.append(bigChange("t1", 1, 1000), tree("t1", 1))));
    const overhead = statSync(path.join(probe, CHANGE_LOG)).size - 1000;
    // The second line's header starts 1 byte, 40 bytes and 200 bytes before the third read's
    // edge (across it, the tab on the far side, or all of it before), or exactly on it.
    for (const before of [1, 40, 200, 0]) {
      const dir = await logWith(async (log) => {
        log.applied(await log.append(bigChange("t1", 1, 2 * MiB - before - overhead), tree("t1", 1)));
        log.applied(await log.append(change("t2", 1), tree("t2", 1)));
        log.applied(await log.append(bigChange("t1", 2, 3 * MiB), tree("t1", 2)));
      });
      const file = path.join(dir, CHANGE_LOG);
      const whole = statSync(file).size;
      // A power cut in a long last line: zeros where a block of it never got written.
      appendFileSync(file, Buffer.concat([Buffer.from('{"t":"c","treeId":"t1","revision":3}\t{"change":'), Buffer.alloc(MiB + 5, "y"), Buffer.alloc(4096), Buffer.from("}\n")]));
      const messages: string[] = [];
      const log = await ChangeLog.open(dir, (message) => messages.push(message));
      expect(messages).toEqual(["change log repaired after a crash: dropped an unfinished write"]);
      expect(statSync(file).size).toBe(whole);
      expect(log.entries("t1").map((e) => e.revision)).toEqual([1, 2]);
      expect(log.entries("t2").map((e) => e.revision)).toEqual([1]);
      const [first, second] = await log.read(log.entries("t1"));
      expect(first.change.after[0].content).toHaveLength(2 * MiB - before - overhead);
      expect(second.change.after[0].content).toHaveLength(3 * MiB);
      expect((await log.read(log.entries("t2")))[0].change.revision).toBe(1);
      await log.close();
    }
  });

  it("refuses to open when a line before the last is damaged, even one longer than a read", async () => {
    const dir = await logWith(async (log) => {
      log.applied(await log.append(change("t1", 1), tree("t1", 1)));
    });
    const file = path.join(dir, CHANGE_LOG);
    const damagedAt = statSync(file).size;
    appendFileSync(file, `{"t":"c","treeId":${"x".repeat(2 << 20)}\n`);
    appendFileSync(file, readFileSync(file, "utf8").split("\n").find((line) => line.startsWith('{"t":"c"'))! + "\n");
    await expect(ChangeLog.open(dir, quiet)).rejects.toThrow(`changes.log is damaged at byte ${damagedAt}`);
  });

  it("serves appends waiting together with one fdatasync, and counts what each covered", async () => {
    await logWith(async (log) => {
      // One alone: a flush of its own, started at once.
      log.applied(await log.append(change("t1", 1), tree("t1", 1)));
      expect(log.flushFigures).toMatchObject({ flushes: 1, changes: 1, largestGroup: 1 });
      // 20 at once: the first starts a flush, the others share the next one (or that one).
      const appended = await Promise.all(Array.from({ length: 20 }, (_, i) => log.append(change(`g${i}`, 1), tree(`g${i}`, 1))));
      for (const entry of appended) log.applied(entry);
      const { flushes, changes, largestGroup } = log.flushFigures;
      expect(changes).toBe(21);
      expect(flushes).toBeGreaterThan(1);
      expect(flushes).toBeLessThanOrEqual(3);
      expect(largestGroup).toBeGreaterThanOrEqual(10);
    });
  });
});
