/**
 * The outbox (SPEC §13, design/offline.md rule 1): every change the writer makes to a tree is
 * written here, with its client id, a sequence number and an idempotency key, before the
 * interface calls it done, and stays until the server has answered it. The entries carry
 * intent, not snapshots (rule 2): "create card X here with this text", "set X's text to T,
 * made from version v", "delete X and its subtree as they were".
 *
 * This file is free of the DOM and of IndexedDB: the browser keeps entries in IndexedDB
 * (idb.ts), the Node simulation in memory (MemoryDevice below), behind the same interface.
 */
import type { Card, Tree } from "../../shared/records.js";

export type EntryKind = "create" | "update" | "delete" | "import";

/** The fields of a card as the server last confirmed them: what an edit was made from. */
export interface EntryBase {
  __v: number;
  content: string;
  parentId: string | null;
  position: number;
}

export interface OutboxEntry {
  /** Order of making, shared by every tab of the device (IndexedDB's key generator). */
  seq?: number;
  /** The `Idempotency-Key` sent with it; a new one only after a definite answer (a 409 settled). */
  key: string;
  treeId: string;
  /** The queue (one per open tree per tab) sending it; another queue adopts it when that one is gone. */
  owner: string;
  /** When the writer made it (ms since the epoch). */
  at: number;
  kind: EntryKind;
  /** The card's id (for a create, the id the client chose: SPEC §13). Empty for an import. */
  cardId: string;
  /** Create and update: the card's fields to send. */
  fields?: { content: string; parentId: string | null; position: number };
  /** Update and delete: the server's version the change was made from. */
  base?: EntryBase;
  /**
   * Create and move: the ancestors of the card's (intended) parent, nearest first, when the
   * change was made; where it lands if its parent was deleted meanwhile (rule 5).
   */
  path?: string[];
  /** Delete: the subtree as the writer saw it (ids and versions); changed since, it is kept. */
  subtree?: { id: string; v: number }[];
  /** Import and paste: the seed and where it goes. */
  seed?: { parentId: string | null; text: string; at?: number; kind: "import" | "paste" };
  /** Sent at least once: what is sent under `key` never changes again. */
  sent: boolean;
  /**
   * Create: answered, and kept only until the device's copy of the tree holds the card. A tab
   * killed in between left a copy without the card and an outbox without its create: the next
   * tab, opened offline, did not show the card the writer made (SyncQueue.copyTaken).
   */
  answered?: boolean;
}

/** The device's keeping of one user's outbox and tree copies. */
export interface DeviceStore {
  /** Gets ready for the first read or write (IndexedDB's database opened), which then does not wait for that. */
  open(): void;
  /** Adds an entry and returns it with its sequence number. */
  add(entry: OutboxEntry): Promise<OutboxEntry>;
  /** Replaces an entry (same `seq`). */
  put(entry: OutboxEntry): Promise<void>;
  remove(seq: number): Promise<void>;
  /** The entries of one tree (all trees without), in order. */
  entries(treeId?: string): Promise<OutboxEntry[]>;
  /** `now`: in one go (the page is going away), not spread over tasks. */
  saveTree(copy: TreeCopy, options?: { now?: boolean }): Promise<void>;
  loadTree(treeId: string): Promise<TreeCopy | null>;
  saveTreeList(trees: Tree[]): Promise<void>;
  loadTreeList(): Promise<Tree[] | null>;
}

/** A tree as the server last confirmed it, kept so the app opens it offline (with its revision). */
export interface TreeCopy {
  tree: Tree;
  cards: Card[];
  savedAt: number;
}

/**
 * The writer's words a change carries: a card's text it creates or sets, an import's or a
 * paste's text; none for a delete, or for an edit that only moved its card (its text as it was).
 */
export function wordsOf(entry: OutboxEntry): string | null {
  const unchanged = entry.kind === "update" && entry.base !== undefined && entry.fields?.content === entry.base.content;
  if (entry.kind === "delete" || !entry.fields || entry.fields.content === "" || unchanged) return entry.seed?.text ?? null;
  return entry.fields.content;
}

/** The entries still waiting for the server: not the creates answered and kept until a copy holds their card. */
export function waitingEntries(entries: OutboxEntry[]): OutboxEntry[] {
  return entries.filter((entry) => !entry.answered);
}

/** Idempotency keys: `ct-` and 32 random hex digits (visible ASCII, SPEC §13), one per change. */
export function newIdempotencyKey(): string {
  let key = "ct-";
  for (const byte of globalThis.crypto.getRandomValues(new Uint8Array(16))) key += byte.toString(16).padStart(2, "0");
  return key;
}

/** The device store in memory, for the Node simulation and unit tests (the browser uses idb.ts). */
export class MemoryDevice implements DeviceStore {
  private next = 1;
  private readonly outbox = new Map<number, OutboxEntry>();
  private readonly trees = new Map<string, TreeCopy>();
  private list: Tree[] | null = null;

  open(): void {}

  async add(entry: OutboxEntry): Promise<OutboxEntry> {
    const stored = { ...structuredClone(entry), seq: this.next++ };
    this.outbox.set(stored.seq, stored);
    return { ...entry, seq: stored.seq };
  }

  async put(entry: OutboxEntry): Promise<void> {
    if (entry.seq === undefined) throw new Error("put() of an entry never added");
    this.outbox.set(entry.seq, structuredClone(entry));
  }

  async remove(seq: number): Promise<void> {
    this.outbox.delete(seq);
  }

  async entries(treeId?: string): Promise<OutboxEntry[]> {
    return [...this.outbox.values()]
      .filter((entry) => treeId === undefined || entry.treeId === treeId)
      .sort((a, b) => a.seq! - b.seq!)
      .map((entry) => structuredClone(entry));
  }

  async saveTree(copy: TreeCopy): Promise<void> {
    this.trees.set(copy.tree._id, structuredClone(copy));
  }

  async loadTree(treeId: string): Promise<TreeCopy | null> {
    const copy = this.trees.get(treeId);
    return copy ? structuredClone(copy) : null;
  }

  async saveTreeList(trees: Tree[]): Promise<void> {
    this.list = structuredClone(trees);
  }

  async loadTreeList(): Promise<Tree[] | null> {
    return this.list ? structuredClone(this.list) : null;
  }
}
