/**
 * The embedded store's change log (SPEC §10): one append-only file, `changes.log`, that is
 * the store's redo log. A change is appended here first, as one line, and only then applied
 * to the cards and trees datafiles; so whatever a crash leaves, the log holds every change
 * that reached a datafile, and at open every change past a tree's stored `revision` is
 * applied again (a change carries the full after-state of every record it touched, so
 * applying it twice is the same as once). docs/architecture.md, "The change log".
 *
 * Lines (each ending in "\n"; a last line without it was never acknowledged and is dropped):
 * - a change: a JSON header `{"t":"c",treeId,revision,at,kind,userId,cardIds}`, a tab, and
 *   the JSON body `{"change":Change,"tree":Tree}` (the tree record after it). JSON never
 *   holds a raw tab, so an open parses only the headers: the bodies (a 100,000-card import
 *   is one body of tens of MB) are read when history asks for them;
 * - `{"t":"abort","treeId","revision"}`: the latest earlier change with that key failed to
 *   apply while running and was undone; it does not count;
 * - `{"t":"removed","treeId"}`: the tree was deleted; its changes no longer count, and an
 *   open finishes the deletion if a crash interrupted it.
 *
 * Memory: only a small index entry per change (revision, time, kind, author, where its
 * line is, and the ids of the cards it touched when they are few); the changes themselves
 * are read from the file on demand. Pruned and deleted trees' lines are dropped when the
 * file is compacted, which writes a new file beside it and renames it in (like the
 * datafiles), holding appends only for the final copy of lines written meanwhile.
 */
import { open, rename, stat, truncate, unlink, type FileHandle } from "node:fs/promises";
import path from "node:path";
import type { Change, ChangeKind } from "../shared/changes.js";
import type { Tree } from "../shared/records.js";
import { openPrivate } from "./file-modes.js";
import { syncDirectory, type RepairLog } from "./nedb-recovery.js";
import { failedUndo, failLikeFullDisk, type WriteFaults } from "./write-faults.js";

export const CHANGE_LOG = "changes.log";

/** Card ids kept in memory per change up to this many; a bigger change is read from disk. */
const CARD_IDS_IN_MEMORY = 8;
/** How much of the file one read at open takes. */
const READ_CHUNK = 1 << 20;
const NEWLINE = 0x0a;

/** What the log keeps in memory of a change: its header, and where its line is. */
export interface LogEntry extends Omit<ChangeHeader, "t"> {
  offset: number;
  length: number;
}

export interface LoggedChange {
  change: Change;
  tree: Tree;
}

interface ChangeHeader {
  t: "c";
  treeId: string;
  revision: number;
  at: string;
  kind: ChangeKind;
  userId: string | null;
  /** Ids of the cards it touched, or null when there are more than CARD_IDS_IN_MEMORY. */
  cardIds: string[] | null;
}

type Line = ChangeHeader | { t: "abort"; treeId: string; revision: number } | { t: "removed"; treeId: string };

const TAB = 0x09;

function changeLine(change: Change, tree: Tree): string {
  const ids = touchedIds(change);
  const header: ChangeHeader = {
    t: "c",
    treeId: change.treeId,
    revision: change.revision,
    at: change.at,
    kind: change.kind,
    userId: change.userId,
    cardIds: ids.length <= CARD_IDS_IN_MEMORY ? ids : null,
  };
  return `${JSON.stringify(header)}\t${JSON.stringify({ change, tree })}\n`;
}

/** The longest prefix of a log's text that finished appends wrote (for backups). */
export function repairChangeLogText(text: string): string {
  return text.slice(0, text.lastIndexOf("\n") + 1);
}

/** A promise chain: one append (or compaction step) at a time. */
class Mutex {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

function touchedIds(change: Change): string[] {
  const ids = new Set<string>();
  for (const card of change.before) ids.add(card._id);
  for (const card of change.after) ids.add(card._id);
  return [...ids];
}

function entryOf(header: ChangeHeader, offset: number, length: number, intern: (s: string) => string): LogEntry {
  return {
    treeId: intern(header.treeId),
    revision: header.revision,
    at: header.at,
    kind: intern(header.kind) as ChangeKind,
    userId: header.userId === null ? null : intern(header.userId),
    cardIds: header.cardIds,
    offset,
    length,
  };
}

export class ChangeLog {
  private readonly byTree = new Map<string, LogEntry[]>();
  /** Appended, not yet applied nor aborted: compaction must keep them. */
  private readonly pending = new Set<LogEntry>();
  private readonly strings = new Map<string, string>();
  private readonly mutex = new Mutex();
  private size = 0;
  /** Bytes of lines that no longer count (aborted, deleted trees, pruned, markers). */
  garbageBytes = 0;
  /** Trees deleted, as the file says; an open finishes their deletion. */
  readonly removedTrees = new Set<string>();
  private compacting: Promise<void> | null = null;
  /** Reads running, and the swap of a compacted file waiting for them to end. */
  private readers = 0;
  private readersDone: (() => void) | null = null;
  private swapping: Promise<void> | null = null;

  private constructor(
    readonly file: string,
    private handle: FileHandle,
    private readonly faults: WriteFaults | undefined,
  ) {}

  private readonly intern = (s: string): string => {
    const known = this.strings.get(s);
    if (known !== undefined) return known;
    this.strings.set(s, s);
    return s;
  };

  /** Opens (or creates) the log in `dir`, dropping a torn last line. */
  static async open(dir: string, log: RepairLog, faults?: WriteFaults): Promise<ChangeLog> {
    const file = path.join(dir, CHANGE_LOG);
    const handle = await openPrivate(file, "a+");
    const changeLog = new ChangeLog(file, handle, faults);
    try {
      await changeLog.load(log);
    } catch (err) {
      await handle.close();
      throw err;
    }
    return changeLog;
  }

  private async load(log: RepairLog): Promise<void> {
    const { size } = await this.handle.stat();
    let position = 0;
    let carry: Buffer = Buffer.alloc(0);
    let good = 0;
    let bad = 0;
    const chunk = Buffer.alloc(READ_CHUNK);
    while (position < size) {
      const { bytesRead } = await this.handle.read(chunk, 0, Math.min(READ_CHUNK, size - position), position);
      if (bytesRead === 0) break;
      const data: Buffer = carry.length > 0 ? Buffer.concat([carry, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
      const dataStart = position - carry.length;
      position += bytesRead;
      let start = 0;
      for (let end = data.indexOf(NEWLINE, start); end !== -1; end = data.indexOf(NEWLINE, start)) {
        const tab = data.indexOf(TAB, start);
        const headerEnd = tab !== -1 && tab < end ? tab : end;
        const line = data.subarray(start, headerEnd).toString("utf8");
        if (this.take(line, dataStart + start, end + 1 - start)) {
          good = dataStart + end + 1;
        } else if (end > start) {
          bad++;
          // Only the last line may be torn; anything earlier is damage.
          if (dataStart + end + 1 < size) {
            throw new Error(`${CHANGE_LOG} is damaged at byte ${dataStart + start}: refusing to open the store rather than lose data.`);
          }
        }
        start = end + 1;
      }
      carry = Buffer.from(data.subarray(start));
    }
    if (good < size) {
      log("change log repaired after a crash: dropped an unfinished write", {
        file: CHANGE_LOG,
        droppedBytes: size - good,
        tornLine: carry.length > 0 || bad > 0,
      });
      await truncate(this.file, good);
      await this.handle.sync();
    }
    this.size = good;
  }

  /** Takes one complete line into the index; false when it does not parse. */
  private take(text: string, offset: number, length: number): boolean {
    let line: Line;
    try {
      line = JSON.parse(text) as Line;
    } catch {
      return false;
    }
    if (line === null || typeof line !== "object") return false;
    if (line.t === "c") {
      if (this.removedTrees.has(line.treeId)) this.garbageBytes += length;
      else this.entriesOf(line.treeId).push(entryOf(line, offset, length, this.intern));
    } else if (line.t === "abort") {
      this.garbageBytes += length;
      const list = this.byTree.get(line.treeId);
      const last = list?.at(-1);
      if (list && last?.revision === line.revision) {
        list.pop();
        this.garbageBytes += last.length;
      }
    } else if (line.t === "removed") {
      this.garbageBytes += length;
      this.dropTree(line.treeId);
      this.removedTrees.add(line.treeId);
    } else return false;
    return true;
  }

  private entriesOf(treeId: string): LogEntry[] {
    let list = this.byTree.get(treeId);
    if (!list) this.byTree.set(this.intern(treeId), (list = []));
    return list;
  }

  private dropTree(treeId: string): void {
    for (const entry of this.byTree.get(treeId) ?? []) this.garbageBytes += entry.length;
    this.byTree.delete(treeId);
  }

  /** Appends one line; a failed append is cut off the file again (or throws `undoFailed`). */
  private appendLine(text: string, collection: string): Promise<{ offset: number; length: number }> {
    return this.mutex.run(async () => {
      const offset = this.size;
      const fault = this.faults?.take(collection) ?? null;
      try {
        if (fault) failLikeFullDisk(this.file, text);
        const bytes = Buffer.from(text, "utf8");
        let written = 0;
        while (written < bytes.length) {
          const { bytesWritten } = await this.handle.write(bytes, written, bytes.length - written);
          written += bytesWritten;
        }
        this.size += bytes.length;
        return { offset, length: bytes.length };
      } catch (err) {
        try {
          if (fault?.stuck) failedUndo();
          await truncate(this.file, offset);
        } catch (undo) {
          throw new ChangeLogUndoError(err, undo);
        }
        throw err;
      }
    });
  }

  /**
   * Appends a change before it is applied. Resolves once the line is written (the page
   * cache survives a crash of the process, like the datafiles' appends).
   */
  async append(change: Change, tree: Tree): Promise<LogEntry> {
    const text = changeLine(change, tree);
    const { offset, length } = await this.appendLine(text, "changes");
    const entry = entryOf(JSON.parse(text.slice(0, text.indexOf("\t"))) as ChangeHeader, offset, length, this.intern);
    this.pending.add(entry);
    return entry;
  }

  /** The change of `entry` reached the datafiles: it joins the index. */
  applied(entry: LogEntry): void {
    this.pending.delete(entry);
    this.entriesOf(entry.treeId).push(entry);
  }

  /** The change of `entry` was undone in the datafiles: it is marked so in the file. */
  async abort(entry: LogEntry): Promise<void> {
    this.pending.delete(entry);
    const { length } = await this.appendLine(`${JSON.stringify({ t: "abort", treeId: entry.treeId, revision: entry.revision })}\n`, "changes");
    this.garbageBytes += entry.length + length;
  }

  /** Marks the tree deleted, before its records are removed. */
  async treeRemoved(treeId: string): Promise<void> {
    const { length } = await this.appendLine(`${JSON.stringify({ t: "removed", treeId })}\n`, "changes");
    this.garbageBytes += length;
    this.dropTree(treeId);
    this.removedTrees.add(treeId);
  }

  /** The tree's changes still kept, oldest first. */
  entries(treeId: string): readonly LogEntry[] {
    return this.byTree.get(treeId) ?? [];
  }

  /** Every tree the log holds changes of. */
  treeIds(): string[] {
    return [...this.byTree.keys()];
  }

  latestRevision(treeId: string): number {
    return this.byTree.get(treeId)?.at(-1)?.revision ?? 0;
  }

  /**
   * Reads the changes of `entries` from the file, in the order given. Reads and the moment a
   * compaction renames its new file in (and moves the entries' offsets) exclude each other.
   */
  async read(entries: readonly LogEntry[]): Promise<LoggedChange[]> {
    if (entries.length === 0) return [];
    while (this.swapping) await this.swapping;
    this.readers++;
    try {
      const reader = await open(this.file, "r");
      try {
        const out: LoggedChange[] = [];
        for (const entry of entries) {
          const bytes = Buffer.alloc(entry.length);
          await reader.read(bytes, 0, entry.length, entry.offset);
          const tab = bytes.indexOf(TAB);
          if (tab === -1) throw new Error(`${CHANGE_LOG}: expected a change at byte ${entry.offset}`);
          out.push(JSON.parse(bytes.subarray(tab + 1).toString("utf8")) as LoggedChange);
        }
        return out;
      } finally {
        await reader.close();
      }
    } finally {
      this.readers--;
      if (this.readers === 0) this.readersDone?.();
    }
  }

  /** Runs `swap` once no read is running, holding new reads until it is done. */
  private async exclusive(swap: () => Promise<void>): Promise<void> {
    let release!: () => void;
    this.swapping = new Promise<void>((resolve) => (release = resolve));
    try {
      while (this.readers > 0) await new Promise<void>((resolve) => (this.readersDone = resolve));
      this.readersDone = null;
      await swap();
    } finally {
      this.swapping = null;
      release();
    }
  }

  /**
   * Forgets changes older than `olderThan` (never a tree's latest) and compacts the file so
   * they are gone from disk too. Resolves to how many were dropped.
   */
  async prune(olderThan: string): Promise<number> {
    let dropped = 0;
    for (const [treeId, list] of this.byTree) {
      const keep = list.filter((entry, i) => i === list.length - 1 || entry.at >= olderThan);
      if (keep.length === list.length) continue;
      for (const entry of list) if (!keep.includes(entry)) this.garbageBytes += entry.length;
      dropped += list.length - keep.length;
      this.byTree.set(treeId, keep);
    }
    if (dropped > 0) await this.compact();
    return dropped;
  }

  /** Whether enough of the file no longer counts to be worth a rewrite. */
  wantsCompaction(minBytes: number): boolean {
    return this.garbageBytes >= minBytes && this.garbageBytes >= this.size - this.garbageBytes;
  }

  /** Rewrites the file with only the lines that count; one run at a time. */
  compact(): Promise<void> {
    this.compacting ??= this.rewrite().finally(() => {
      this.compacting = null;
    });
    return this.compacting;
  }

  private async rewrite(): Promise<void> {
    // Snapshot: every entry that counts (indexed or still being applied), and the size.
    const snapshot = await this.mutex.run(async () => ({
      size: this.size,
      entries: [...[...this.byTree.values()].flat(), ...this.pending].sort((a, b) => a.offset - b.offset),
      removed: [...this.removedTrees],
    }));
    const temp = `${this.file}~`;
    const out = await openPrivate(temp, "w");
    const reader = await open(this.file, "r");
    let renamed = false;
    try {
      const moved = new Map<LogEntry, number>();
      let written = 0;
      // Deletions stay marked: a crash may have stopped one before its records were gone.
      for (const treeId of snapshot.removed) {
        const text = Buffer.from(`${JSON.stringify({ t: "removed", treeId })}\n`);
        await out.write(text);
        written += text.length;
      }
      for (const entry of snapshot.entries) {
        const bytes = Buffer.alloc(entry.length);
        await reader.read(bytes, 0, entry.length, entry.offset);
        await out.write(bytes);
        moved.set(entry, written);
        written += entry.length;
      }
      await this.mutex.run(() => this.exclusive(async () => {
        // Lines appended meanwhile (whole appends: they run under this mutex), as they are.
        const shift = written - snapshot.size;
        if (this.size > snapshot.size) {
          const tail = Buffer.alloc(this.size - snapshot.size);
          await reader.read(tail, 0, tail.length, snapshot.size);
          await out.write(tail);
        }
        await out.sync();
        await out.close();
        await rename(temp, this.file);
        renamed = true;
        await syncDirectory(path.dirname(this.file));
        const handle = await openPrivate(this.file, "a+");
        await this.handle.close();
        this.handle = handle;
        for (const entry of [...[...this.byTree.values()].flat(), ...this.pending]) {
          const at = moved.get(entry);
          entry.offset = at ?? entry.offset + shift;
        }
        this.size = (await stat(this.file)).size;
        this.garbageBytes = this.size - this.liveBytes();
      }));
    } finally {
      await reader.close();
      if (!renamed) {
        await out.close().catch(() => undefined);
        await unlink(temp).catch(() => undefined);
      }
    }
  }

  private liveBytes(): number {
    let bytes = 0;
    for (const list of this.byTree.values()) for (const entry of list) bytes += entry.length;
    for (const entry of this.pending) bytes += entry.length;
    return bytes;
  }

  /** Resolves once no compaction is running. */
  async idle(): Promise<void> {
    await this.compacting?.catch(() => undefined);
  }

  /** Waits for a running compaction, then closes the file. */
  async close(): Promise<void> {
    await this.compacting?.catch(() => undefined);
    await this.mutex.run(async () => {
      await this.handle.sync().catch(() => undefined);
      await this.handle.close();
    });
  }
}

/** A failed append whose bytes could not be cut off the log again: the store must stop. */
export class ChangeLogUndoError extends Error {
  constructor(
    readonly failed: unknown,
    readonly undo: unknown,
  ) {
    super(`The change log could not undo a failed append: ${String(undo)} (after ${String(failed)})`);
  }
}
