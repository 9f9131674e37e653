/**
 * The browser's device store (outbox.ts's DeviceStore) in IndexedDB: one database per user,
 * `cardtree-<userId>`, so that what one user keeps is never read for another and logging out
 * deletes it whole (SPEC §13, "A shared computer stays private"). Three object stores:
 * - `outbox`: the changes not yet acknowledged, keyed by an auto-incremented sequence number
 *   (shared by every tab, so their changes keep one order), indexed by tree;
 * - `trees`: each tree opened lately as the server last confirmed it, with its revision (its
 *   cards as slices of JSON text, `saveTree`);
 * - `meta`: the user's list of trees.
 *
 * The wrapper is ours (some 100 lines): the `idb` package would save little beyond promises
 * over requests, which is all this file does.
 */
import type { Card, Tree } from "../../shared/records.js";
import type { DeviceStore, OutboxEntry, TreeCopy } from "./outbox.js";

const VERSION = 1;
const PREFIX = "cardtree-";

export function databaseName(userId: string): string {
  return `${PREFIX}${userId}`;
}

function promised<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error("IndexedDB request failed"));
  });
}

function finished(transaction: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error ?? new Error("IndexedDB transaction failed"));
    transaction.onabort = () => reject(transaction.error ?? new Error("IndexedDB transaction aborted"));
  });
}

function open(name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name, VERSION);
    request.onupgradeneeded = () => {
      const db = request.result;
      const outbox = db.createObjectStore("outbox", { keyPath: "seq", autoIncrement: true });
      outbox.createIndex("tree", "treeId");
      db.createObjectStore("trees", { keyPath: "tree._id" });
      db.createObjectStore("meta");
    };
    request.onsuccess = () => {
      const db = request.result;
      // Another tab is deleting this user's data (a log-out): let it.
      db.onversionchange = () => db.close();
      resolve(db);
    };
    request.onerror = () => reject(request.error ?? new Error("IndexedDB could not be opened"));
    request.onblocked = () => reject(new Error("IndexedDB is blocked by another tab"));
  });
}

/** The user's data on this browser was deleted (a log-out): writes after it are dropped, quietly. */
export class DeviceClosedError extends Error {
  constructor() {
    super("This browser's copy of the user's data was deleted (logged out).");
    this.name = "DeviceClosedError";
  }
}

export class IndexedDbDevice implements DeviceStore {
  private db: Promise<IDBDatabase> | null = null;
  /** Closed for good (the user logged out): a late write must not make the database again. */
  private closed = false;
  /** The copy of each tree being made now (saveTree), by its turn. */
  private readonly saving = new Map<string, number>();
  private turns = 0;

  constructor(readonly userId: string) {}

  private database(): Promise<IDBDatabase> {
    if (this.closed) return Promise.reject(new DeviceClosedError());
    this.db ??= open(databaseName(this.userId)).catch((error: unknown) => {
      this.db = null;
      throw error;
    });
    return this.db;
  }

  open(): void {
    this.database().catch(() => undefined);
  }

  private async write(storeName: string, act: (store: IDBObjectStore) => IDBRequest | void): Promise<unknown> {
    const db = await this.database();
    // "strict" durability: the write is on disk when the promise resolves (Chromium's default
    // is relaxed, which can lose the last writes in a power cut).
    const transaction = db.transaction(storeName, "readwrite", { durability: "strict" });
    const request = act(transaction.objectStore(storeName));
    // Committed now, not when the page's task ends: a write made as the page goes (pagehide,
    // tree-page.ts) was otherwise dropped with the page, in Chromium even one made at once.
    if (typeof transaction.commit === "function") transaction.commit();
    const result = request ? promised(request) : Promise.resolve(undefined);
    await finished(transaction);
    return result;
  }

  private async read<T>(storeName: string, act: (store: IDBObjectStore) => IDBRequest<T>): Promise<T> {
    const db = await this.database();
    return promised(act(db.transaction(storeName, "readonly").objectStore(storeName)));
  }

  async add(entry: OutboxEntry): Promise<OutboxEntry> {
    const { seq: _ignored, ...rest } = entry;
    const seq = (await this.write("outbox", (store) => store.add(rest))) as number;
    return { ...entry, seq };
  }

  async put(entry: OutboxEntry): Promise<void> {
    await this.write("outbox", (store) => store.put(entry));
  }

  async remove(seq: number): Promise<void> {
    await this.write("outbox", (store) => store.delete(seq));
  }

  async entries(treeId?: string): Promise<OutboxEntry[]> {
    const all = await this.read<OutboxEntry[]>("outbox", (store) => (treeId === undefined ? store.getAll() : store.index("tree").getAll(treeId)));
    return all.sort((a, b) => a.seq! - b.seq!);
  }

  /**
   * Kept as JSON text in slices of COPY_SLICE cards, each made in a task of its own (unless
   * `now`), and written in one put: IndexedDB clones what it is given on the page's thread,
   * and a 100,000-card tree as objects was one clone of ~0.3 s that froze the page right
   * after it opened (issue 27); its text clones in a few milliseconds. `copy.cards` must not
   * change meanwhile (the callers hand over copies made for it).
   */
  async saveTree(copy: TreeCopy, options: { now?: boolean } = {}): Promise<void> {
    const id = copy.tree._id;
    const turn = (this.turns += 1);
    this.saving.set(id, turn);
    const slices: string[] = [];
    for (let from = 0; from < copy.cards.length; from += COPY_SLICE) {
      if (from > 0 && !options.now) await new Promise((resolve) => setTimeout(resolve, 0));
      slices.push(JSON.stringify(copy.cards.slice(from, from + COPY_SLICE)));
    }
    // A later copy of the same tree, started meanwhile, is the one kept.
    if (this.saving.get(id) !== turn) return;
    this.saving.delete(id);
    const stored: StoredCopy = { tree: copy.tree, savedAt: copy.savedAt, slices };
    await this.write("trees", (store) => store.put(stored));
    await this.prune();
  }

  async loadTree(treeId: string): Promise<TreeCopy | null> {
    const stored = await this.read<StoredCopy | undefined>("trees", (store) => store.get(treeId));
    if (!stored) return null;
    // Copies kept before the slices hold their cards as objects.
    if (!stored.slices) return { tree: stored.tree, cards: stored.cards ?? [], savedAt: stored.savedAt };
    const cards: Card[] = [];
    for (const slice of stored.slices) for (const card of JSON.parse(slice) as Card[]) cards.push(card);
    return { tree: stored.tree, cards, savedAt: stored.savedAt };
  }

  async saveTreeList(trees: Tree[]): Promise<void> {
    await this.write("meta", (store) => store.put(trees, "trees"));
  }

  async loadTreeList(): Promise<Tree[] | null> {
    return (await this.read<Tree[] | undefined>("meta", (store) => store.get("trees"))) ?? null;
  }

  /** Keeps the trees opened lately: the 20 saved last. */
  private async prune(): Promise<void> {
    const keys = await this.read<IDBValidKey[]>("trees", (store) => store.getAllKeys());
    if (keys.length <= KEPT_TREES) return;
    const copies = await this.read<StoredCopy[]>("trees", (store) => store.getAll());
    const old = copies.sort((a, b) => b.savedAt - a.savedAt).slice(KEPT_TREES);
    await this.write("trees", (store) => {
      for (const copy of old) store.delete(copy.tree._id);
    });
  }

  close(): void {
    this.closed = true;
    void this.db?.then((db) => db.close()).catch(() => undefined);
    this.db = null;
  }
}

/** Cards per slice of JSON text in a kept tree (saveTree). */
const COPY_SLICE = 2_000;

/** A tree's copy as the `trees` store holds it: its cards as JSON slices, or (kept before them) as objects. */
interface StoredCopy {
  tree: Tree;
  savedAt: number;
  slices?: string[];
  cards?: Card[];
}

/** How many trees a device keeps for opening offline. */
export const KEPT_TREES = 20;

/** Deletes everything the device keeps for a user (their log-out). */
export function forgetUser(userId: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(databaseName(userId));
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error ?? new Error("IndexedDB could not be deleted"));
    // Other tabs close their connection on `versionchange`; the deletion then goes ahead.
    request.onblocked = () => undefined;
  });
}
