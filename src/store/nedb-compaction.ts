/**
 * Compaction that does not stop the service, of a datafile this code owns (NeDB never sees
 * a file: embedded-collections.ts). The collection's writes are held only to note how far
 * the file goes and, at the end, to copy the few lines appended meanwhile and rename the
 * new file in place. In between, the file up to that point is replayed (later lines win,
 * `$$deleted` removes, batch marks dropped) and written out one line per record, in short
 * slices that give the event loop back; reads and writes go on meanwhile.
 *
 * A crash at any point leaves the old datafile whole: the new one is written beside it as
 * `NAME~` and renamed over it only once complete and synced, and the directory is synced
 * after the rename (an open ignores a `~` file when the datafile exists). The new file
 * starts with a new epoch line (datafile.ts); `beforeSwap` runs before the rename (the
 * store flushes the change log there) and `afterSwap` after it, while writes are still
 * held, before any append reaches the new file: the store logs the file's checkpoint there.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { epochLine, type Datafile } from "./datafile.js";
import { parseRecordLine, recordLine } from "./nedb-recovery.js";

type Doc = Record<string, unknown>;

/** What a compaction needs of the collection: its writes held, and how many records it has. */
export interface CompactionSubject {
  /** Runs `work` with the collection's writes (and reads) held. */
  hold<T>(work: () => Promise<T>): Promise<T>;
  /** Records the collection holds now. */
  liveRecords(): number;
}

export interface CompactionStats {
  records: number;
  /** The longest the collection's writes were held (the note of the end, then catch-up and rename). */
  queueHeldMs: number;
  /** The longest single slice of synchronous work. */
  longestSliceMs: number;
  totalMs: number;
}

/** Synchronous work per slice before the event loop gets a turn. */
const SLICE_MS = 8;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A file the compaction schedule looks after. */
export interface Compactable {
  readonly file: string;
  /** Whether the file has grown enough, by `policy`, to be rewritten. */
  due(policy: CompactionPolicy): boolean;
  compact(): Promise<unknown>;
  /** Resolves once no compaction is running. */
  idle(): Promise<void>;
}

export class DatafileCompactor implements Compactable {
  /** Lines appended since the last compaction: how much of the file is superseded. */
  appendedLines = 0;
  private running: Promise<CompactionStats> | null = null;

  /** Runs with writes held, before the new file is renamed in. */
  beforeSwap: (() => Promise<void>) | null = null;
  /** Runs with writes held, once the new file is in place. */
  afterSwap: (() => Promise<void>) | null = null;

  constructor(
    private readonly subject: CompactionSubject,
    private readonly datafile: Datafile,
    /** Synchronous work per slice (the power-cut tests make it one slice, so a run repeats exactly). */
    private readonly sliceMs = SLICE_MS,
  ) {}

  get file(): string {
    return this.datafile.file;
  }

  due(policy: CompactionPolicy): boolean {
    return this.appendedLines >= policy.minAppendedLines && this.appendedLines >= policy.garbageRatio * this.subject.liveRecords();
  }

  /** Rewrites the datafile with one line per live record; one run at a time. */
  compact(): Promise<CompactionStats> {
    this.running ??= this.datafile.exclusive(() => this.run()).finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Resolves once no compaction is running. */
  async idle(): Promise<void> {
    await this.running?.catch(() => undefined);
  }

  private async run(): Promise<CompactionStats> {
    const started = performance.now();
    let queueHeldMs = 0;
    let longestSliceMs = 0;

    const held = async <T>(work: () => Promise<T>): Promise<T> =>
      this.subject.hold(async () => {
        const t = performance.now();
        try {
          return await work();
        } finally {
          queueHeldMs = Math.max(queueHeldMs, performance.now() - t);
        }
      });

    const { fs } = this.datafile;
    const snapshot = await held(async () => ({ size: this.datafile.size, appended: this.appendedLines }));

    // The file up to the snapshot: complete writes only (every append runs with writes held).
    const bytes = Buffer.alloc(snapshot.size);
    const source = await fs.open(this.file, "r");
    try {
      if (bytes.length > 0) await source.read(bytes, 0, bytes.length, 0);
    } finally {
      await source.close();
    }
    const text = bytes.toString("utf8");
    const records = new Map<string, Doc>();
    let at = 0;
    while (at < text.length) {
      const sliceStart = performance.now();
      while (at < text.length && performance.now() - sliceStart < this.sliceMs) {
        let end = text.indexOf("\n", at);
        if (end === -1) end = text.length;
        const line = text.slice(at, end);
        at = end + 1;
        if (line === "") continue;
        let doc: Doc;
        try {
          doc = parseRecordLine(line) as Doc;
        } catch {
          continue;
        }
        if (doc === null || typeof doc !== "object" || typeof doc._id !== "string" || doc._id === "") continue;
        if (doc.$$deleted === true) records.delete(doc._id);
        else {
          if ("batch" in doc) delete doc.batch;
          records.set(doc._id, doc);
        }
      }
      longestSliceMs = Math.max(longestSliceMs, performance.now() - sliceStart);
      await yieldToEventLoop();
    }

    const temp = `${this.file}~`;
    const epoch = randomBytes(8).toString("hex");
    const handle = await fs.open(temp, "w");
    let renamed = false;
    try {
      await handle.write(epochLine(epoch));
      const docs = [...records.values()];
      let i = 0;
      while (i < docs.length) {
        const sliceStart = performance.now();
        let chunk = "";
        while (i < docs.length && performance.now() - sliceStart < this.sliceMs) {
          chunk += `${recordLine(docs[i])}\n`;
          i++;
        }
        longestSliceMs = Math.max(longestSliceMs, performance.now() - sliceStart);
        await handle.write(chunk);
        await yieldToEventLoop();
      }
      // Most of the bytes reach the disk before writes are held for the swap.
      await handle.datasync();

      await held(async () => {
        // Lines appended while the snapshot was written, as they are.
        const end = this.datafile.size;
        if (end > snapshot.size) {
          const again = await fs.open(this.file, "r");
          try {
            const tail = Buffer.alloc(end - snapshot.size);
            await again.read(tail, 0, tail.length, snapshot.size);
            await handle.write(tail);
          } finally {
            await again.close();
          }
        }
        await handle.datasync();
        await handle.close();
        await this.beforeSwap?.();
        await fs.rename(temp, this.file);
        renamed = true;
        await fs.syncDirectory(path.dirname(this.file));
        await this.datafile.replaced(epoch);
        this.appendedLines -= snapshot.appended;
        await this.afterSwap?.();
      });
      return {
        records: docs.length,
        queueHeldMs,
        longestSliceMs,
        totalMs: performance.now() - started,
      };
    } finally {
      if (!renamed) {
        await handle.close().catch(() => undefined);
        await fs.unlink(temp).catch(() => undefined);
      }
    }
  }
}

export interface CompactionPolicy {
  /** How often to look at the datafiles (0: never; compactions only when asked for). */
  checkIntervalMs: number;
  /** Compact once at least this many lines were appended since the last compaction, */
  minAppendedLines: number;
  /** and at least this many per live record (1: the file is about twice what it needs). */
  garbageRatio: number;
  /** Synchronous work per slice of a compaction (default 8 ms). */
  sliceMs?: number;
}

export const DEFAULT_COMPACTION_POLICY: CompactionPolicy = { checkIntervalMs: 60_000, minAppendedLines: 1000, garbageRatio: 1 };

/**
 * Compacts a datafile when it has grown to about twice what its live records need, one
 * datafile at a time. Returns a stop function that waits for a running compaction.
 */
export function scheduleCompaction(
  compactors: readonly Compactable[],
  policy: CompactionPolicy,
  onError: (err: unknown, file: string) => void,
): () => Promise<void> {
  // 0: never by time (the power-cut runs compact when they choose; an abandoned store's
  // timer would keep all of it alive).
  if (policy.checkIntervalMs <= 0) return async () => Promise.all(compactors.map((c) => c.idle())).then(() => undefined);
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      for (const compactor of compactors) {
        if (!compactor.due(policy)) continue;
        await compactor.compact().catch((err) => onError(err, compactor.file));
      }
    } finally {
      busy = false;
    }
  }, policy.checkIntervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await Promise.all(compactors.map((c) => c.idle()));
  };
}
