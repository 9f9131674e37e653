/**
 * Words refused for good, kept per user in localStorage (unsaved-words.ts). Node has no
 * localStorage: a Map stands in for the browser's, with a quota to overflow.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Tree } from "../../shared/records.js";
import { MemoryDevice, type OutboxEntry } from "./outbox.js";
import { forgetUnsavedWords, keepUnsavedWords, keepWordsOfLostTree, unsavedWords } from "./unsaved-words.js";

class MapStorage {
  readonly items = new Map<string, string>();
  writes = 0;
  constructor(private readonly quota = Infinity) {}
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    if (value.length > this.quota) throw new DOMException("The quota has been exceeded.", "QuotaExceededError");
    this.writes++;
    this.items.set(key, value);
  }
  removeItem(key: string): void {
    this.items.delete(key);
  }
}

const words = (text: string, treeId = "t") => ({ treeId, treeName: "Notes", text, reason: "Couldn't save the card." });

describe("words the server refused for good", () => {
  let storage: MapStorage;
  beforeEach(() => {
    storage = new MapStorage();
    (globalThis as { localStorage?: unknown }).localStorage = storage;
  });
  afterEach(() => {
    delete (globalThis as { localStorage?: unknown }).localStorage;
  });

  it("are kept per user, oldest first, each once, until let go", () => {
    expect(keepUnsavedWords("u1", words("first"), 1)).toBe(true);
    expect(keepUnsavedWords("u1", words("second"), 2)).toBe(true);
    expect(keepUnsavedWords("u2", words("another writer's"), 3)).toBe(true);
    // The same text of the same tree (a second tab refused the same change): kept once.
    expect(keepUnsavedWords("u1", words("first"), 4)).toBe(true);
    // The same text of another tree is other words.
    expect(keepUnsavedWords("u1", words("first", "t2"), 5)).toBe(true);
    const kept = unsavedWords("u1");
    expect(kept.map((w) => [w.text, w.treeId, w.at])).toEqual([
      ["first", "t", 1],
      ["second", "t", 2],
      ["first", "t2", 5],
    ]);
    expect(unsavedWords("u2").map((w) => w.text)).toEqual(["another writer's"]);
    forgetUnsavedWords("u1", kept[0].id);
    expect(unsavedWords("u1").map((w) => w.text)).toEqual(["second", "first"]);
    for (const w of unsavedWords("u1")) forgetUnsavedWords("u1", w.id);
    expect(unsavedWords("u1")).toEqual([]);
    expect(storage.items.has("cardtree:unsaved-words:u1")).toBe(false);
  });

  it("say so when the browser will not keep them, and keep what was kept before", () => {
    storage = new MapStorage(400);
    (globalThis as { localStorage?: unknown }).localStorage = storage;
    expect(keepUnsavedWords("u", words("short"))).toBe(true);
    expect(keepUnsavedWords("u", words("long ".repeat(100)))).toBe(false);
    expect(unsavedWords("u").map((w) => w.text)).toEqual(["short"]);
  });

  it("ignore what is not a list of kept words (storage anything may have written)", () => {
    storage.setItem("cardtree:unsaved-words:u", JSON.stringify([{ text: "no id" }, 3, null, { id: "a", treeId: "t", treeName: "N", text: "ok", reason: "r", at: 1 }]));
    expect(unsavedWords("u").map((w) => w.text)).toEqual(["ok"]);
    storage.setItem("cardtree:unsaved-words:u", "{not json");
    expect(unsavedWords("u")).toEqual([]);
  });

  it("from the outbox of a tree gone: the words of each change that carries some, and the outbox emptied of it", async () => {
    const device = new MemoryDevice();
    await device.saveTree({ tree: { _id: "gone", name: "Lost notes" } as Tree, cards: [], savedAt: 1 });
    const base = { __v: 1, content: "old", parentId: null, position: 0 };
    const entry = (fields: Partial<OutboxEntry>): OutboxEntry => ({ key: "k", treeId: "gone", owner: "tab", at: 1, kind: "update", cardId: "c", sent: false, ...fields });
    await device.add(entry({ fields: { content: "old, and new words", parentId: null, position: 0 }, base }));
    // Only moved: its text as it was.
    await device.add(entry({ cardId: "m", fields: { content: "old", parentId: null, position: 3 }, base }));
    await device.add(entry({ kind: "delete", cardId: "d", base }));
    await device.add(entry({ kind: "create", cardId: "n", fields: { content: "a new card", parentId: null, position: 1 } }));
    // Answered already: on the server before the tree went, nothing to keep.
    await device.add(entry({ kind: "create", cardId: "a", fields: { content: "answered", parentId: null, position: 2 }, answered: true }));
    await device.add(entry({ kind: "import", cardId: "", seed: { parentId: null, text: "# Imported\n\nwords", kind: "import" } }));
    // Another tree's change stays.
    await device.add(entry({ treeId: "other", fields: { content: "elsewhere", parentId: null, position: 0 }, base }));

    expect(await keepWordsOfLostTree(device, "u", "gone", "This tree doesn't exist.")).toBe(3);
    expect(unsavedWords("u").map((w) => [w.treeName, w.text, w.reason])).toEqual([
      ["Lost notes", "old, and new words", "This tree doesn't exist."],
      ["Lost notes", "a new card", "This tree doesn't exist."],
      ["Lost notes", "# Imported\n\nwords", "This tree doesn't exist."],
    ]);
    expect(await device.entries("gone")).toEqual([]);
    expect((await device.entries()).map((e) => e.treeId)).toEqual(["other"]);
  });

  it("from the outbox of a tree gone: a thousand changes in one write, words kept already counted once", async () => {
    const device = new MemoryDevice();
    for (let i = 0; i < 1000; i++) {
      await device.add({ key: `k${i}`, treeId: "gone", owner: "tab", at: i, kind: "create", cardId: `n${i}`, sent: false, fields: { content: `card ${i % 999}`, parentId: null, position: i } });
    }
    keepUnsavedWords("u", { treeId: "gone", treeName: "Lost", text: "card 0", reason: "refused before" });
    const before = storage.writes;
    // "card 0" twice in the outbox (0 and 999), and kept already: 998 new texts.
    expect(await keepWordsOfLostTree(device, "u", "gone", "gone")).toBe(998);
    expect(storage.writes - before).toBe(1);
    expect(unsavedWords("u")).toHaveLength(999);
    expect(await device.entries("gone")).toEqual([]);
  });

  it("from the outbox of a tree gone: an entry whose words the browser will not keep stays in the outbox", async () => {
    storage = new MapStorage(10);
    (globalThis as { localStorage?: unknown }).localStorage = storage;
    const device = new MemoryDevice();
    await device.add({ key: "k", treeId: "gone", owner: "tab", at: 1, kind: "create", cardId: "n", sent: false, fields: { content: "words that do not fit", parentId: null, position: 0 } });
    expect(await keepWordsOfLostTree(device, "u", "gone", "gone")).toBe(0);
    expect(await device.entries("gone")).toHaveLength(1);
  });
});
