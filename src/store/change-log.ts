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
 *   the JSON body `{"change":Change,"tree":Tree}` (the tree record after it). A change a
 *   request with an Idempotency-Key made has `"i":{u,k,f,n}` in its header (user, key, the
 *   request's fingerprint, the command step): the key goes to disk in the change's own line,
 *   so after a crash a retry finds what the request did (`keyed`). JSON never
 *   holds a raw tab, so an open parses only the headers: the bodies (a 100,000-card import
 *   is one body of tens of MB) are read when history asks for them;
 * - `{"t":"abort","treeId","revision"}`: the latest earlier change with that key failed to
 *   apply while running and was undone; it does not count;
 * - `{"t":"removed","treeId"}`: the tree was deleted; its changes no longer count, and an
 *   open finishes the deletion if a crash interrupted it. A keyed request's deletion adds
 *   `"i"` (as a change's header), `"at"` and `"x"` (until when its key lives): the line that
 *   marks the deletion durably is also what a retry after a crash finds (`keyedRemovals`);
 * - `{"t":"ckpt",file,epoch,size,seq}`: a checkpoint of `cards.db` or `trees.db`: the file
 *   of that epoch was synced up to `size` bytes, and every change numbered up to `seq` was
 *   finished in it (applied, or undone and aborted). An open cuts the file back to it and
 *   redoes the changes after it (nedb-store.ts); the last one per file counts.
 *
 * Power loss (docs/reliability.md): each change header carries a sequence number `s`, and
 * `append` resolves only once its line is on stable storage (fdatasync; one flush serves
 * every append waiting at its moment: group commit), unless `SYNC=off`. A power cut can
 * leave the unsynced end torn, with zeros where blocks never got written; a line holding a
 * NUL byte is such a tear, and it and everything after it are dropped at open.
 *
 * Memory: only a small index entry per change (revision, time, kind, author, where its
 * line is, and the ids of the cards it touched when they are few); the changes themselves
 * are read from the file on demand. Pruned and deleted trees' lines are dropped when the
 * file is compacted, which writes a new file beside it and renames it in (like the
 * datafiles), holding appends only for the final copy of lines written meanwhile.
 */
import path from "node:path";
import type { Change, ChangeKind } from "../shared/changes.js";
import type { ChangeKey, KeyedRemoval } from "../domain/ports/store.js";
import type { Tree } from "../shared/records.js";
import type { DatafileCheckpoint } from "./datafile.js";
import { nodeFileSystem, type FileHandle, type FileSystem, type SyncMode } from "./file-system.js";
import type { RepairLog } from "./nedb-recovery.js";
import { failedUndo, failLikeFullDisk, type WriteFaults } from "./write-faults.js";

export const CHANGE_LOG = "changes.log";

/** Card ids kept in memory per change up to this many; a bigger change is read from disk. */
const CARD_IDS_IN_MEMORY = 8;
/** How much of the file one read at open takes. */
const READ_CHUNK = 1 << 20;
const NEWLINE = 0x0a;

/** What the log keeps in memory of a change: its header, and where its line is. */
export interface LogEntry extends Omit<ChangeHeader, "t" | "s" | "i"> {
  seq: number;
  offset: number;
  length: number;
  /** The keyed request that made the change, if one did. */
  key?: ChangeKey;
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
  /** Its sequence number in the log (0: written before checkpoints existed). */
  s?: number;
  /** The keyed request that made it: user, Idempotency-Key, fingerprint, command step. */
  i?: { u: string; k: string; f: string; n: number };
}

interface CheckpointLine extends DatafileCheckpoint {
  t: "ckpt";
  file: string;
}

/** A tree's deletion; a keyed request's also says which request (as a change's `i`), when, and until when its key lives. */
interface RemovedLine {
  t: "removed";
  treeId: string;
  i?: { u: string; k: string; f: string; n: number };
  at?: string;
  x?: string;
  /**
   * Written by a compaction for a keyed removal of a tree made again since (a client-chosen
   * id used again): only the key counts, the tree stays (it is not deleted at the next open).
   */
  again?: 1;
}

type Line = ChangeHeader | { t: "abort"; treeId: string; revision: number } | RemovedLine | CheckpointLine;

function removedLine(treeId: string, keyed: KeyedRemoval | undefined, again = false): string {
  const line: RemovedLine = { t: "removed", treeId };
  if (again) line.again = 1;
  if (keyed) {
    const { userId, key, fingerprint, step } = keyed.key;
    Object.assign(line, { i: { u: userId, k: key, f: fingerprint, n: step }, at: keyed.at, x: keyed.expiresAt });
  }
  return `${JSON.stringify(line)}\n`;
}

const TAB = 0x09;

function changeHeader(change: Change, seq: number, key: ChangeKey | undefined): ChangeHeader {
  const ids = touchedIds(change);
  const header: ChangeHeader = {
    t: "c",
    treeId: change.treeId,
    revision: change.revision,
    at: change.at,
    kind: change.kind,
    userId: change.userId,
    cardIds: ids.length <= CARD_IDS_IN_MEMORY ? ids : null,
    s: seq,
  };
  if (key) header.i = { u: key.userId, k: key.key, f: key.fingerprint, n: key.step };
  return header;
}

function changeLine(header: ChangeHeader, change: Change, tree: Tree): string {
  return `${JSON.stringify(header)}\t${JSON.stringify({ change, tree })}\n`;
}

/** The longest prefix of a log's text that finished appends wrote (for backups). */
export function repairChangeLogText(text: string): string {
  const nul = text.indexOf("\0");
  const end = nul === -1 ? text.length : text.lastIndexOf("\n", nul) + 1;
  return text.slice(0, text.lastIndexOf("\n", end - 1) + 1);
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
  const entry: LogEntry = {
    treeId: intern(header.treeId),
    revision: header.revision,
    at: header.at,
    kind: intern(header.kind) as ChangeKind,
    userId: header.userId === null ? null : intern(header.userId),
    cardIds: header.cardIds,
    seq: header.s ?? 0,
    offset,
    length,
  };
  if (header.i) entry.key = { userId: intern(header.i.u), key: header.i.k, fingerprint: header.i.f, step: header.i.n };
  return entry;
}

/** Group commit's figures: fdatasyncs of the log, the change lines they covered, the most one covered, their time. */
export interface FlushFigures {
  flushes: number;
  changes: number;
  largestGroup: number;
  flushMs: number;
}

export interface ChangeLogOptions {
  fs?: FileSystem;
  /** Whether `append` waits for stable storage (default on). */
  sync?: SyncMode;
  faults?: WriteFaults;
}

export class ChangeLog {
  private readonly byTree = new Map<string, LogEntry[]>();
  /** Appended, not yet applied nor aborted: compaction must keep them. */
  private readonly pending = new Set<LogEntry>();
  /** Changes undone while running; an open after a power cut undoes those past a checkpoint again. */
  private aborted: LogEntry[] = [];
  private readonly strings = new Map<string, string>();
  private readonly mutex = new Mutex();
  private size = 0;
  private lastSeq = 0;
  /** Bytes ever appended in this process, and how many of them are known to be on stable storage. */
  private appendedTotal = 0;
  private durableTotal = 0;
  private flushing: Promise<void> | null = null;
  /** Change lines appended in this process, and how many of them a started flush covers. */
  private appendedChanges = 0;
  private coveredChanges = 0;
  /** What group commit did in this process (logged at close; the durability bench reads it). */
  readonly flushFigures: FlushFigures = { flushes: 0, changes: 0, largestGroup: 0, flushMs: 0 };
  /** The error of a failed flush; from then on no wait for stable storage succeeds. */
  private syncFailure: unknown = null;
  /** Bytes of lines that no longer count (aborted, deleted trees, pruned, markers). */
  garbageBytes = 0;
  /** Trees deleted, as the file says; an open finishes their deletion. */
  readonly removedTrees = new Set<string>();
  /**
   * Deletions a keyed request made, until their key expires (`forgetRemovalKeys`), by tree,
   * user and key: a tree made again with its id and deleted again keeps both deletions' keys.
   */
  private readonly removalKeys = new Map<string, { treeId: string; removal: KeyedRemoval }>();
  /** The latest checkpoint of each datafile, by file name. */
  readonly checkpoints = new Map<string, DatafileCheckpoint>();
  private compacting: Promise<void> | null = null;
  /** Reads running, and the swap of a compacted file waiting for them to end. */
  private readers = 0;
  private readersDone: (() => void) | null = null;
  private swapping: Promise<void> | null = null;
  /** Runs before a compaction drops lines: the store checkpoints its datafiles there. */
  beforeCompaction: (() => Promise<void>) | null = null;

  private constructor(
    readonly file: string,
    private handle: FileHandle,
    private readonly fs: FileSystem,
    private readonly sync: SyncMode,
    private readonly faults: WriteFaults | undefined,
  ) {}

  private readonly intern = (s: string): string => {
    const known = this.strings.get(s);
    if (known !== undefined) return known;
    this.strings.set(s, s);
    return s;
  };

  /** Opens (or creates) the log in `dir`, dropping a torn last line. */
  static async open(dir: string, log: RepairLog, options: ChangeLogOptions = {}): Promise<ChangeLog> {
    const fs = options.fs ?? nodeFileSystem;
    const file = path.join(dir, CHANGE_LOG);
    const created = (await fs.size(file)) === null;
    const handle = await fs.open(file, "a+");
    const changeLog = new ChangeLog(file, handle, fs, options.sync ?? "on", options.faults);
    try {
      if (created) await fs.syncDirectory(dir);
      await changeLog.load(log);
    } catch (err) {
      await handle.close();
      throw err;
    }
    return changeLog;
  }

  private async load(log: RepairLog): Promise<void> {
    const size = await this.handle.size();
    let position = 0;
    let good = 0;
    let bad = 0;
    let tear = false;
    // The line being read: where it starts in the file (-1 between lines), its header once its
    // tab (or end) is read, and until then the header's bytes from earlier chunks. A line longer
    // than a chunk (a big import's body is tens of MB) is never held whole: only its header is.
    let lineStart = -1;
    let header: string | null = null;
    let headerPieces: Buffer[] = [];
    reading: while (position < size) {
      // A fresh buffer per read, so a header's bytes can be kept across reads without a copy.
      const data = Buffer.allocUnsafe(Math.min(READ_CHUNK, size - position));
      const bytesRead = await this.handle.read(data, 0, data.length, position);
      if (bytesRead === 0) break;
      const chunk = data.subarray(0, bytesRead);
      const chunkStart = position;
      position += bytesRead;
      // Zeros are blocks a power cut kept from being written: nothing from there on was
      // acknowledged. One search a chunk (per line, a search with no zero ahead would read the
      // rest of the chunk each time); the same for the tab, searched again only once passed.
      const nul = chunk.indexOf(0);
      let tab = chunk.indexOf(TAB);
      let start = 0;
      while (start < bytesRead) {
        if (lineStart === -1) lineStart = chunkStart + start;
        const end = chunk.indexOf(NEWLINE, start);
        const stop = end === -1 ? bytesRead : end;
        if (nul !== -1 && nul < stop) {
          tear = true;
          break reading;
        }
        if (tab !== -1 && tab < start) tab = chunk.indexOf(TAB, start);
        if (header === null) {
          const headerEnd = tab !== -1 && tab < stop ? tab : stop;
          const piece = chunk.subarray(start, headerEnd);
          if (headerEnd < stop || end !== -1) {
            header = (headerPieces.length > 0 ? Buffer.concat([...headerPieces, piece]) : piece).toString("utf8");
            headerPieces = [];
          } else headerPieces.push(piece);
        }
        if (end === -1) break;
        const lineEnd = chunkStart + end + 1;
        if (this.take(header!, lineStart, lineEnd - lineStart)) {
          good = lineEnd;
        } else if (lineEnd - lineStart > 1) {
          bad++;
          // Only the last line may be torn; anything earlier is damage.
          if (lineEnd < size) {
            throw new Error(`${CHANGE_LOG} is damaged at byte ${lineStart}: refusing to open the store rather than lose data.`);
          }
        }
        lineStart = -1;
        header = null;
        start = end + 1;
      }
    }
    if (good < size) {
      log("change log repaired after a crash: dropped an unfinished write", {
        file: CHANGE_LOG,
        droppedBytes: size - good,
        tornLine: lineStart !== -1 || bad > 0 || tear,
      });
      await this.fs.truncate(this.file, good);
      await this.handle.datasync();
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
      const entry = entryOf(line, offset, length, this.intern);
      this.lastSeq = Math.max(this.lastSeq, entry.seq);
      // A change after the tree's removal is of a tree made again with the same id (the log is
      // in order): it is not deleted at the open, and its changes count.
      this.removedTrees.delete(line.treeId);
      this.entriesOf(line.treeId).push(entry);
    } else if (line.t === "abort") {
      this.garbageBytes += length;
      const list = this.byTree.get(line.treeId);
      const last = list?.at(-1);
      if (list && last?.revision === line.revision) {
        list.pop();
        this.garbageBytes += last.length;
        if (last.seq > 0) this.aborted.push(last);
      }
    } else if (line.t === "removed") {
      this.garbageBytes += length;
      if (!line.again) {
        this.dropTree(line.treeId);
        this.removedTrees.add(line.treeId);
      }
      if (line.i && line.at && line.x) {
        const key = { userId: this.intern(line.i.u), key: line.i.k, fingerprint: line.i.f, step: line.i.n };
        this.keepRemovalKey(line.treeId, { key, at: line.at, expiresAt: line.x });
      }
    } else if (line.t === "ckpt") {
      this.garbageBytes += length;
      this.checkpoints.set(line.file, { epoch: line.epoch, size: line.size, seq: line.seq });
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

  /**
   * Appends one line (`text`, or the line `make` writes with the next sequence number); a
   * failed append is cut off the file again (or throws `undoFailed`).
   */
  private appendLine(make: string | ((seq: number) => string), collection: string): Promise<{ offset: number; length: number; text: string; total: number }> {
    return this.mutex.run(async () => {
      const offset = this.size;
      const text = typeof make === "string" ? make : make(this.lastSeq + 1);
      const fault = this.faults?.take(collection) ?? null;
      try {
        if (fault) await failLikeFullDisk((half) => this.handle.write(half), this.file, text);
        const bytes = Buffer.from(text, "utf8");
        await this.handle.write(bytes);
        this.size += bytes.length;
        this.appendedTotal += bytes.length;
        if (typeof make !== "string") {
          this.lastSeq++;
          this.appendedChanges++;
        }
        return { offset, length: bytes.length, text, total: this.appendedTotal };
      } catch (err) {
        try {
          if (fault?.stuck) failedUndo();
          await this.fs.truncate(this.file, offset);
        } catch (undo) {
          throw new ChangeLogUndoError(err, undo);
        }
        throw err;
      }
    });
  }

  /**
   * Resolves once every byte appended up to `total` is on stable storage. One fdatasync at
   * a time; every append waiting when it starts is served by the next one (group commit),
   * and one alone starts it at once.
   */
  private async durable(total: number, force = false): Promise<void> {
    if (this.sync === "off" && !force) return;
    while (this.durableTotal < total) {
      // After a failed fdatasync nothing unsynced is known to be on disk, and a retry may
      // report success for pages the kernel already dropped: every wait past it fails too.
      if (this.syncFailure) throw new ChangeLogSyncError(this.syncFailure);
      if (!this.flushing) {
        const target = this.appendedTotal;
        const handle = this.handle;
        const group = this.appendedChanges - this.coveredChanges;
        this.coveredChanges = this.appendedChanges;
        const figures = this.flushFigures;
        figures.flushes++;
        figures.changes += group;
        figures.largestGroup = Math.max(figures.largestGroup, group);
        const started = performance.now();
        this.flushing = handle
          .datasync()
          .then(
            () => {
              figures.flushMs += performance.now() - started;
              this.durableTotal = Math.max(this.durableTotal, target);
            },
            (err: unknown) => {
              this.syncFailure ??= err;
              throw err;
            },
          )
          .finally(() => {
            this.flushing = null;
          });
      }
      try {
        await this.flushing;
      } catch (err) {
        throw new ChangeLogSyncError(err);
      }
    }
  }

  /**
   * Appends a change before it is applied. Resolves once the line is on stable storage
   * (with `SYNC=off`: once written, which a crash of the process survives).
   */
  async append(change: Change, tree: Tree, key?: ChangeKey): Promise<LogEntry> {
    const { entry, durable } = await this.appendEarly(change, tree, key);
    await durable;
    return entry;
  }

  /**
   * Appends a change before it is applied and resolves once its line is written (a crash
   * of the process survives it), with `durable`, which resolves once the line is on stable
   * storage (group commit; at once with `SYNC=off`) and rejects with ChangeLogSyncError
   * when the flush fails. A change applied before `durable` resolved must not be answered
   * before it, nor may anything that read it (nedb-store.ts `commitEarly`).
   */
  async appendEarly(change: Change, tree: Tree, key?: ChangeKey): Promise<{ entry: LogEntry; durable: Promise<void> }> {
    let header!: ChangeHeader;
    const { offset, length, total } = await this.appendLine((seq) => changeLine((header = changeHeader(change, seq, key)), change, tree), "changes");
    const entry = entryOf(header, offset, length, this.intern);
    // A tree deleted before and made again with its id: it is not deleted at the next open.
    this.removedTrees.delete(tree._id);
    // Should the sync fail, the store fails.
    this.pending.add(entry);
    return { entry, durable: this.durable(total) };
  }

  /** Resolves once every line appended so far is on stable storage (with `SYNC=off`, at once). */
  settled(): Promise<void> {
    return this.durable(this.appendedTotal);
  }

  /** Every line appended so far onto stable storage, whatever `SYNC` says (before a compacted datafile is renamed in). */
  flush(): Promise<void> {
    return this.durable(this.appendedTotal, true);
  }

  /** The change of `entry` reached the datafiles: it joins the index. */
  applied(entry: LogEntry): void {
    this.pending.delete(entry);
    this.entriesOf(entry.treeId).push(entry);
  }

  /** The change of `entry` was undone in the datafiles: it is marked so in the file, durably. */
  async abort(entry: LogEntry): Promise<void> {
    const { length, total } = await this.appendLine(`${JSON.stringify({ t: "abort", treeId: entry.treeId, revision: entry.revision })}\n`, "changes");
    this.pending.delete(entry);
    this.aborted.push(entry);
    this.garbageBytes += entry.length + length;
    await this.durable(total);
  }

  /**
   * Marks the tree deleted, durably, before its records are removed; with `keyed`, by that
   * keyed request (`keyedRemovals`), in the same line.
   */
  async treeRemoved(treeId: string, keyed?: KeyedRemoval): Promise<void> {
    const { length, total } = await this.appendLine(removedLine(treeId, keyed), "changes");
    this.garbageBytes += length;
    this.dropTree(treeId);
    this.removedTrees.add(treeId);
    if (keyed) this.keepRemovalKey(treeId, keyed);
    await this.durable(total);
  }

  /**
   * The trees keyed requests deleted, with their keys: every one when `userId` is absent,
   * else that user's with `key` at `since` or later. A scan, asked at open and when a claim
   * is taken over, like `keyed`.
   */
  keyedRemovals(match?: { userId: string; key: string; since: string }): { treeId: string; removal: KeyedRemoval }[] {
    const found: { treeId: string; removal: KeyedRemoval }[] = [];
    for (const { treeId, removal } of this.removalKeys.values()) {
      if (match && (removal.key.userId !== match.userId || removal.key.key !== match.key || removal.at < match.since)) continue;
      found.push({ treeId, removal });
    }
    return found;
  }

  private keepRemovalKey(treeId: string, removal: KeyedRemoval): void {
    this.removalKeys.set(`${treeId}\0${removal.key.userId}\0${removal.key.key}`, { treeId, removal });
  }

  /**
   * The lines a compaction keeps for deletions: one for each deleted tree (with each key that
   * deleted it), and the keys of deletions of trees made again since, marked so (`again`).
   */
  private removedLines(): string[] {
    const lines: string[] = [];
    const keyed = new Set<string>();
    for (const { treeId, removal } of this.removalKeys.values()) {
      const removed = this.removedTrees.has(treeId);
      if (removed) keyed.add(treeId);
      lines.push(removedLine(treeId, removal, !removed));
    }
    for (const treeId of this.removedTrees) if (!keyed.has(treeId)) lines.push(removedLine(treeId, undefined));
    return lines;
  }

  /** Forgets which keys deleted trees once those keys expired (`now`); the next compaction drops them from the file. */
  forgetRemovalKeys(now: string): void {
    for (const [id, { removal }] of this.removalKeys) if (removal.expiresAt < now) this.removalKeys.delete(id);
  }

  /**
   * The sequence number every change up to which is finished (applied or aborted): what a
   * datafile measured now holds all of.
   */
  finishedThrough(): number {
    let lowest = this.lastSeq + 1;
    for (const entry of this.pending) if (entry.seq < lowest) lowest = entry.seq;
    return lowest - 1;
  }

  /** Logs a datafile's checkpoint, durably whatever `SYNC` says: the file must be synced up to `size` already. */
  async checkpoint(file: string, checkpoint: DatafileCheckpoint): Promise<void> {
    const line: CheckpointLine = { t: "ckpt", file, ...checkpoint };
    const { length, total } = await this.appendLine(`${JSON.stringify(line)}\n`, "changes");
    this.garbageBytes += length;
    await this.durable(total, true);
    this.checkpoints.set(file, checkpoint);
  }

  /** Changes aborted with a sequence number above `seq`, oldest first. */
  abortedAfter(seq: number): LogEntry[] {
    return this.aborted.filter((entry) => entry.seq > seq && !this.removedTrees.has(entry.treeId));
  }

  /**
   * The kept changes (applied, not aborted, of trees not deleted) a keyed request made:
   * every one when `userId` is absent, else that user's with `key` at `since` or later.
   * A scan of the index: asked at open and when a claim is taken over, never per write.
   */
  keyed(match?: { userId: string; key: string; since: string }): LogEntry[] {
    const found: LogEntry[] = [];
    for (const list of this.byTree.values()) {
      for (const entry of list) {
        if (!entry.key) continue;
        if (match && (entry.key.userId !== match.userId || entry.key.key !== match.key || entry.at < match.since)) continue;
        found.push(entry);
      }
    }
    return found.sort((a, b) => a.seq - b.seq);
  }

  /** Every change kept with a sequence number above `seq`, in the order they were logged. */
  changesAfter(seq: number): LogEntry[] {
    const found: LogEntry[] = [];
    for (const list of this.byTree.values()) for (const entry of list) if (entry.seq > seq) found.push(entry);
    return found.sort((a, b) => a.seq - b.seq);
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
      const reader = await this.fs.open(this.file, "r");
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
    // The datafiles first hold everything the pruned lines would redo.
    await this.beforeCompaction?.();
    const floor = this.checkpointFloor();
    let dropped = 0;
    for (const [treeId, list] of this.byTree) {
      const keep = list.filter((entry, i) => i === list.length - 1 || entry.at >= olderThan || entry.seq > floor);
      if (keep.length === list.length) continue;
      for (const entry of list) if (!keep.includes(entry)) this.garbageBytes += entry.length;
      dropped += list.length - keep.length;
      this.byTree.set(treeId, keep);
    }
    if (dropped > 0) await this.compact();
    return dropped;
  }

  /**
   * The lowest sequence number the datafiles' checkpoints cover: an open may redo anything
   * above it. A log no datafile checkpointed against redoes nothing.
   */
  private checkpointFloor(): number {
    let floor = this.lastSeq;
    for (const checkpoint of this.checkpoints.values()) floor = Math.min(floor, checkpoint.seq);
    return floor;
  }

  /** Whether enough of the file no longer counts to be worth a rewrite. */
  wantsCompaction(minBytes: number): boolean {
    return this.garbageBytes >= minBytes && this.garbageBytes >= this.size - this.garbageBytes;
  }

  /** Rewrites the file with only the lines that count; one run at a time. */
  compact(): Promise<void> {
    this.compacting ??= (async () => {
      await this.beforeCompaction?.();
      await this.rewrite();
    })().finally(() => {
      this.compacting = null;
    });
    return this.compacting;
  }

  private async rewrite(): Promise<void> {
    const { fs } = this;
    // Snapshot: every entry that counts (indexed or still being applied), the aborted ones
    // an open may still have to undo, and the size.
    const snapshot = await this.mutex.run(async () => {
      const floor = this.checkpointFloor();
      this.aborted = this.aborted.filter((entry) => entry.seq > floor && !this.removedTrees.has(entry.treeId));
      return {
        size: this.size,
        entries: [...[...this.byTree.values()].flat(), ...this.pending, ...this.aborted].sort((a, b) => a.offset - b.offset),
        aborted: new Set(this.aborted),
        removed: this.removedLines(),
        checkpoints: [...this.checkpoints],
      };
    });
    const temp = `${this.file}~`;
    const out = await fs.open(temp, "w");
    const reader = await fs.open(this.file, "r");
    let renamed = false;
    try {
      const moved = new Map<LogEntry, number>();
      let written = 0;
      const put = async (bytes: Buffer) => {
        await out.write(bytes);
        written += bytes.length;
      };
      // Deletions stay marked: a crash may have stopped one before its records were gone.
      for (const line of snapshot.removed) await put(Buffer.from(line));
      for (const [file, checkpoint] of snapshot.checkpoints) {
        await put(Buffer.from(`${JSON.stringify({ t: "ckpt", file, ...checkpoint })}\n`));
      }
      for (const entry of snapshot.entries) {
        const bytes = Buffer.alloc(entry.length);
        await reader.read(bytes, 0, entry.length, entry.offset);
        moved.set(entry, written);
        await put(bytes);
        if (snapshot.aborted.has(entry)) {
          await put(Buffer.from(`${JSON.stringify({ t: "abort", treeId: entry.treeId, revision: entry.revision })}\n`));
        }
      }
      await out.datasync();
      await this.mutex.run(() => this.exclusive(async () => {
        // Lines appended meanwhile (whole appends: they run under this mutex), as they are.
        const shift = written - snapshot.size;
        if (this.size > snapshot.size) {
          const tail = Buffer.alloc(this.size - snapshot.size);
          await reader.read(tail, 0, tail.length, snapshot.size);
          await out.write(tail);
        }
        await out.datasync();
        await out.close();
        // No flush of the old file may run across the swap.
        while (this.flushing) await this.flushing.catch(() => undefined);
        await fs.rename(temp, this.file);
        renamed = true;
        await fs.syncDirectory(path.dirname(this.file));
        const handle = await fs.open(this.file, "a+");
        await this.handle.close();
        this.handle = handle;
        // Everything appended so far is in the new file, which is synced.
        this.durableTotal = this.appendedTotal;
        for (const entry of [...[...this.byTree.values()].flat(), ...this.pending, ...this.aborted]) {
          const at = moved.get(entry);
          entry.offset = at ?? entry.offset + shift;
        }
        this.size = await handle.size();
        this.garbageBytes = this.size - this.liveBytes();
      }));
    } finally {
      await reader.close();
      if (!renamed) {
        await out.close().catch(() => undefined);
        await fs.unlink(temp).catch(() => undefined);
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
      await this.handle.datasync().catch(() => undefined);
      await this.handle.close();
    });
  }
}

/** The log could not be synced: whether the appends since the last sync are on disk is unknown, so the store must stop. */
export class ChangeLogSyncError extends Error {
  constructor(readonly failed: unknown) {
    super(`The change log could not be synced to disk: ${String(failed)}`);
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
