/**
 * One NeDB datafile as the embedded store writes it: NeDB's line format, appended through
 * the file-system port on a handle kept open (NeDB itself writes no byte; nedb-store.ts
 * hands its appends here). A file the compactor wrote starts with an epoch line
 * `{"$$epoch":"<hex>"}`, which NeDB's format ignores (no `_id`): a checkpoint in the change
 * log names the epoch of the file it measured, so an open can tell the file it checkpointed
 * from one a compaction renamed over it since (docs/reliability.md, "Power loss").
 */
import path from "node:path";
import { repairDatafileText } from "./datafile-repair.js";
import type { FileHandle, FileSystem } from "./file-system.js";
import { replaceFileDurably, type RepairLog } from "./nedb-recovery.js";

const EPOCH_PREFIX = '{"$$epoch":"';

/** The first line of a compacted datafile. */
export function epochLine(epoch: string): string {
  return `${EPOCH_PREFIX}${epoch}"}\n`;
}

function epochOf(bytes: Buffer): string | null {
  if (bytes.length < EPOCH_PREFIX.length || bytes.toString("utf8", 0, EPOCH_PREFIX.length) !== EPOCH_PREFIX) return null;
  const end = bytes.indexOf('"', EPOCH_PREFIX.length);
  return end === -1 ? null : bytes.toString("utf8", EPOCH_PREFIX.length, end);
}

/** What the change log says was on stable storage of a datafile (change-log.ts, `ckpt` lines). */
export interface DatafileCheckpoint {
  epoch: string | null;
  size: number;
  /** Every change with a sequence number up to this one was finished in the file then. */
  seq: number;
  /**
   * Written by a process running with `SYNC=off`: the file's lines past `size` may have
   * reached the disk while the changes they come from did not reach the log, so an open
   * cuts them off and redoes from the log what it holds. With `SYNC=on` every line past
   * `size` comes from a change already on disk in the log, and stays.
   */
  cut?: boolean;
}

/** How an open treated the file's checkpoint. */
export type CheckpointUse =
  /** No checkpoint (a data directory from before them, or a new one). */
  | "none"
  /** Kept whole (`SYNC=on`): the change log redoes everything past it anyway. */
  | "kept"
  /** Cut back to it (`SYNC=off`): what the file held beyond it is rebuilt from the change log. */
  | "cut"
  /** The file is newer than it (a compaction renamed it in, wholly synced, before its checkpoint was logged). */
  | "newer"
  /** The file is shorter than the checkpoint says it synced: the log is replayed whole. */
  | "short";

export class Datafile {
  private handle: FileHandle | null = null;
  private tail: Promise<unknown> = Promise.resolve();
  /** Bytes in the file (every append so far). */
  size = 0;

  private constructor(
    readonly fs: FileSystem,
    readonly file: string,
    /** The epoch line the file starts with; null for a file no compaction of ours wrote. */
    public epoch: string | null,
  ) {}

  /**
   * Opens the datafile, as NeDB's load would find it: takes over a `NAME~` a compaction
   * left when the datafile itself is missing, creates an empty one otherwise; cuts it back
   * to `checkpoint` when it is the file the checkpoint measured; drops an unfinished tail.
   * Resolves to the file and the text it holds.
   */
  static async open(
    fs: FileSystem,
    file: string,
    log: RepairLog,
    checkpoint?: DatafileCheckpoint,
  ): Promise<{ datafile: Datafile; text: string; checkpointUse: CheckpointUse }> {
    const dir = path.dirname(file);
    if ((await fs.size(file)) === null) {
      if ((await fs.size(`${file}~`)) !== null) await fs.rename(`${file}~`, file);
      else await (await fs.open(file, "a")).close();
      await fs.syncDirectory(dir);
    }
    let bytes = await fs.readFile(file);
    const epoch = epochOf(bytes);
    let checkpointUse: CheckpointUse = "none";
    if (checkpoint && !checkpoint.cut) checkpointUse = "kept";
    else if (checkpoint) {
      if (checkpoint.epoch !== epoch) checkpointUse = "newer";
      else if (bytes.length < checkpoint.size) checkpointUse = "short";
      else {
        checkpointUse = "cut";
        if (bytes.length > checkpoint.size) {
          log("store file cut back to its checkpoint; the change log redoes the rest", {
            file: path.basename(file),
            droppedBytes: bytes.length - checkpoint.size,
          });
          bytes = bytes.subarray(0, checkpoint.size);
          await fs.truncate(file, checkpoint.size);
          const handle = await fs.open(file, "r+");
          await handle.datasync();
          await handle.close();
        }
      }
      if (checkpointUse === "short") {
        log("store file is shorter than its checkpoint; replaying the whole change log", {
          file: path.basename(file),
          size: bytes.length,
          checkpointSize: checkpoint.size,
        });
      }
    }
    const text = bytes.toString("utf8");
    const repair = repairDatafileText(text);
    if (repair.text.length !== text.length) {
      log("store file repaired after a crash: dropped an unfinished write", {
        file: path.basename(file),
        droppedBytes: Buffer.byteLength(text) - Buffer.byteLength(repair.text),
        tornLine: repair.tornLine,
        partialBatch: repair.partialBatch,
      });
      await replaceFileDurably(file, repair.text, fs);
    }
    const datafile = new Datafile(fs, file, epoch);
    datafile.handle = await fs.open(file, "a");
    datafile.size = Buffer.byteLength(repair.text);
    return { datafile, text: repair.text, checkpointUse };
  }

  private get open(): FileHandle {
    if (!this.handle) throw new Error(`${path.basename(this.file)} is closed`);
    return this.handle;
  }

  /** Appends `text`; the size grows by what was written even when it fails part way. */
  async append(text: string): Promise<void> {
    const bytes = Buffer.from(text, "utf8");
    await this.open.write(bytes);
    this.size += bytes.length;
  }

  datasync(): Promise<void> {
    return this.open.datasync();
  }

  /** Cuts the file back to `size` (a failed append's undo). */
  async truncate(size: number): Promise<void> {
    await this.fs.truncate(this.file, size);
    this.size = size;
  }

  /** A compaction renamed a new, synced file (with `epoch`) over this one: appends go there. */
  async replaced(epoch: string): Promise<void> {
    const handle = await this.fs.open(this.file, "a");
    await this.handle?.close();
    this.handle = handle;
    this.epoch = epoch;
    this.size = await handle.size();
  }

  /** Runs `work` alone among this file's compactions and checkpoints. */
  exclusive<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.catch(() => undefined);
    return result;
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = null;
    await handle?.close();
  }
}
