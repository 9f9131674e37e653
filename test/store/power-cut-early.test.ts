/**
 * Issue 32, group commit without the tree's lock across the flush (domain/durability.ts):
 * a tree's next change is made on top of one whose log line is not on disk yet, and each
 * is answered only once its own flush is done. On the power-cut file system:
 * - the seeded run of power-cut-run.ts, every commit through `commitEarly`, keeps every
 *   change answered and shows nothing half-applied after each cut;
 * - a failed flush fails both the change it was for and the one made on top of it, and
 *   the store; what the disk then holds opens consistent.
 */
import { describe, expect, it } from "vitest";
import type { Change } from "../../src/shared/changes.js";
import type { StoredCard, Tree } from "../../src/shared/records.js";
import type { FileHandle, FileSystem } from "../../src/store/file-system.js";
import { openNedbStore } from "../../src/store/nedb-store.js";
import { PowerCutFs, seededRandom } from "./power-cut-fs.js";
import { runPowerCuts } from "./power-cut-run.js";

const seed = process.env.POWER_CUT_SEED ? Number(process.env.POWER_CUT_SEED) : Date.now() % 1_000_000;

/**
 * The power-cut disk, where the change log's next fdatasync, once `failNextLogSync` holds a
 * promise, waits for it and then fails.
 */
function withFailingLogSync(fs: PowerCutFs): FileSystem & { failNextLogSync: Promise<void> | null } {
  const wrapped: FileSystem & { failNextLogSync: Promise<void> | null } = {
    failNextLogSync: null,
    open: async (file, flags) => {
      const handle = await fs.open(file, flags);
      if (!file.endsWith("changes.log")) return handle;
      const failing: FileHandle = {
        write: (data, position) => handle.write(data, position),
        read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
        size: () => handle.size(),
        close: () => handle.close(),
        datasync: async () => {
          const failing = wrapped.failNextLogSync;
          if (failing) {
            wrapped.failNextLogSync = null;
            await failing;
            throw Object.assign(new Error("EIO: i/o error, fdatasync (injected)"), { code: "EIO" });
          }
          return handle.datasync();
        },
      };
      return failing;
    },
    readFile: (file) => fs.readFile(file),
    size: (file) => fs.size(file),
    rename: (from, to) => fs.rename(from, to),
    unlink: (file) => fs.unlink(file),
    truncate: (file, size) => fs.truncate(file, size),
    readdir: (dir) => fs.readdir(dir),
    mkdir: () => fs.mkdir(),
    syncDirectory: (dir) => fs.syncDirectory(dir),
    lock: (dir) => fs.lock(dir),
    makePrivate: () => fs.makePrivate(),
  };
  return wrapped;
}

const at = (n: number) => new Date(Date.parse("2026-01-01T00:00:00.000Z") + n * 1000).toISOString();
const treeId = "tree00000000000000000001";

function treeAt(revision: number): Tree {
  return { __v: revision - 1, revision, _id: treeId, createdAt: at(0), updatedAt: at(revision), name: "t", owner: "u1", users: ["u1"] };
}
function cardAt(revision: number): StoredCard {
  return { _id: "card00000000000000000001", treeId, parentId: null, content: `version ${revision}`, position: 0, createdAt: at(0), updatedAt: at(revision), __v: revision - 1 };
}
function changeTo(revision: number): Change {
  return {
    treeId,
    revision,
    at: at(revision),
    userId: "u1",
    kind: revision === 1 ? "tree.create" : "card.update",
    before: revision === 1 ? [] : [cardAt(revision - 1)],
    after: [cardAt(revision)],
    ...(revision === 1 ? { tree: { before: null, after: treeAt(1) } } : {}),
  };
}

describe("group commit with the tree's lock let go before the flush", () => {
  it(`power cuts: every change answered after its flush is kept, nothing half-applied (seed ${seed})`, async () => {
    const figures = await runPowerCuts({ seed, cuts: 30, early: true });
    expect(figures.cuts).toBe(30);
    expect(figures.answeredWritesChecked).toBeGreaterThan(100);
  }, 120_000);

  it("a failed flush fails the change and the change made on top of it, and the store; the disk opens consistent", async () => {
    const disk = new PowerCutFs(seededRandom(seed));
    const fs = withFailingLogSync(disk);
    const logged: string[] = [];
    const store = await openNedbStore("/data", { fs, log: (message) => logged.push(message), checkpoint: { intervalMs: 0, logBytes: 1 << 20 } });
    await store.changes.commit(changeTo(1), treeAt(1));

    let failNow!: () => void;
    fs.failNextLogSync = new Promise<void>((resolve) => (failNow = resolve));
    const first = await store.changes.commitEarly!(changeTo(2), treeAt(2));
    expect((await store.cards.byId(cardAt(1)._id))?.content).toBe("version 2");
    // Made on top of revision 2 while its flush runs, as the tree's next writer does.
    const second = await store.changes.commitEarly!(changeTo(3), treeAt(3));
    expect((await store.cards.byId(cardAt(1)._id))?.content).toBe("version 3");
    failNow();
    const outcomes = await Promise.allSettled([first.durable, second.durable]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(store.status()).toBe("failed");
    expect(logged).toContain("the store failed: the change log could not be synced");
    // No later flush is trusted either: nothing more is taken.
    await expect(store.changes.commitEarly!(changeTo(4), treeAt(4))).rejects.toThrow(/could not be synced/);

    // The power goes; whatever of revisions 2 and 3 reached the disk, the store opens
    // with the tree, its card and its history at one and the same revision.
    disk.cutNow();
    const reopened = await openNedbStore("/data", { fs: new PowerCutFs(seededRandom(seed), disk.image()), log: () => undefined });
    const revision = (await reopened.trees.byId(treeId))!.revision ?? 0;
    expect(revision).toBeGreaterThanOrEqual(1);
    expect(revision).toBeLessThanOrEqual(3);
    expect((await reopened.cards.byId(cardAt(1)._id))?.content).toBe(`version ${revision}`);
    expect((await reopened.changes.since(treeId, 0, 10)).map((c) => c.revision)).toEqual(Array.from({ length: revision }, (_, i) => i + 1));
    await reopened.close();
  });
});
