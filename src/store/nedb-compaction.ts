/**
 * Compaction that does not stop the service. NeDB's own compaction serialises every record
 * in one synchronous pass inside its queue (about 0.4 s at 100k cards), so every read and
 * write waits for it. Here the queue is held only to take a snapshot of the records (NeDB
 * replaces a record on update rather than changing it, so the snapshot stays as it was)
 * and, at the end, to copy the few lines appended meanwhile and rename the new file in
 * place. The serialising in between runs in short slices that give the event loop back.
 *
 * A crash at any point leaves the old datafile whole: the new one is written beside it as
 * `NAME~` and renamed over it only once complete and synced, and the directory is synced
 * after the rename (an open ignores a `~` file when the datafile exists). The new file
 * starts with a new epoch line (datafile.ts), and `afterSwap` runs while the queue is still
 * held, before any append reaches the new file: the store logs the file's checkpoint there.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { epochLine, type Datafile } from "./datafile.js";
import { nedbModel } from "./nedb-recovery.js";

type Doc = Record<string, unknown>;

/** The parts of @seald-io/nedb's Datastore that compaction works with. */
export interface NedbInternals {
  executor: { pushAsync<T>(task: () => Promise<T>, forceQueuing?: boolean): Promise<T> };
  getAllData(): Doc[];
  indexes: Record<string, { fieldName: string; unique: boolean; sparse: boolean }>;
}

export interface CompactionStats {
  records: number;
  /** The longest the store's queue was held (snapshot, then catch-up and rename). */
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

  /** Runs inside the queue turn of the swap, once the new file is in place. */
  afterSwap: (() => Promise<void>) | null = null;

  constructor(
    private readonly db: NedbInternals,
    private readonly datafile: Datafile,
    /** Synchronous work per slice (the power-cut tests make it one slice, so a run repeats exactly). */
    private readonly sliceMs = SLICE_MS,
  ) {}

  get file(): string {
    return this.datafile.file;
  }

  /** Live records, from NeDB's primary index. */
  liveRecords(): number {
    return this.db.getAllData().length;
  }

  due(policy: CompactionPolicy): boolean {
    return this.appendedLines >= policy.minAppendedLines && this.appendedLines >= policy.garbageRatio * this.liveRecords();
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
      this.db.executor.pushAsync(async () => {
        const t = performance.now();
        try {
          return await work();
        } finally {
          queueHeldMs = Math.max(queueHeldMs, performance.now() - t);
        }
      });

    const { fs } = this.datafile;
    const snapshot = await held(async () => ({
      docs: this.db.getAllData(),
      size: this.datafile.size,
      appended: this.appendedLines,
    }));

    const temp = `${this.file}~`;
    const epoch = randomBytes(8).toString("hex");
    const handle = await fs.open(temp, "w");
    let renamed = false;
    try {
      await handle.write(epochLine(epoch));
      let i = 0;
      while (i < snapshot.docs.length) {
        const sliceStart = performance.now();
        let chunk = "";
        while (i < snapshot.docs.length && performance.now() - sliceStart < this.sliceMs) {
          chunk += `${nedbModel.serialize(snapshot.docs[i])}\n`;
          i++;
        }
        longestSliceMs = Math.max(longestSliceMs, performance.now() - sliceStart);
        await handle.write(chunk);
        await yieldToEventLoop();
      }
      let indexLines = "";
      for (const [name, index] of Object.entries(this.db.indexes)) {
        if (name === "_id") continue;
        const definition = { fieldName: index.fieldName, unique: index.unique, sparse: index.sparse };
        indexLines += `${nedbModel.serialize({ $$indexCreated: definition })}\n`;
      }
      await handle.write(indexLines);
      // Most of the bytes reach the disk before the queue is held for the swap.
      await handle.datasync();

      await held(async () => {
        // Lines appended while the snapshot was written: complete appends only, since
        // every append runs in the queue held now.
        const end = this.datafile.size;
        if (end > snapshot.size) {
          const source = await fs.open(this.file, "r");
          try {
            const tail = Buffer.alloc(end - snapshot.size);
            await source.read(tail, 0, tail.length, snapshot.size);
            await handle.write(tail);
          } finally {
            await source.close();
          }
        }
        await handle.datasync();
        await handle.close();
        await fs.rename(temp, this.file);
        renamed = true;
        await fs.syncDirectory(path.dirname(this.file));
        await this.datafile.replaced(epoch);
        this.appendedLines -= snapshot.appended;
        await this.afterSwap?.();
      });
    } finally {
      if (!renamed) {
        await handle.close().catch(() => undefined);
        await fs.unlink(temp).catch(() => undefined);
      }
    }
    return {
      records: snapshot.docs.length,
      queueHeldMs,
      longestSliceMs,
      totalMs: performance.now() - started,
    };
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
