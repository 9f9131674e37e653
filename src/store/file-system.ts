/**
 * The file-system port of the embedded store: every byte the store, its change log, its
 * compaction and its repairs read or write goes through one of these calls, so that a test
 * file system can stand in for the disk and cut the power between any two of them
 * (test/store/power-cut-fs.ts; docs/reliability.md, "Power loss"). The service uses
 * `nodeFileSystem`. Files are created private (0600), as everything in the data directory.
 *
 * What a call promises is what POSIX promises, no more: a write is in the page cache when
 * it resolves, on stable storage only after `datasync`/`sync` on its handle; a new name,
 * a rename or an unlink is on stable storage only after `syncDirectory` of its directory.
 */
import { writeSync } from "node:fs";
import { mkdir, open, readdir, readFile, rename, stat, truncate, unlink } from "node:fs/promises";
import type { FileHandle as NodeFileHandle } from "node:fs/promises";
import { lockDataDir } from "./data-dir-lock.js";
import { openPrivate, PRIVATE_DIR, tightenDirectory } from "./file-modes.js";

export type OpenFlags = "r" | "r+" | "a" | "a+" | "w";

export interface FileHandle {
  /**
   * Writes all of `data` at `position`; without one, where the last write ended (at the
   * end of the file for an `a` handle, whose writes always append).
   */
  write(data: Buffer | string, position?: number): Promise<void>;
  /** Reads up to `length` bytes at `position` into `buffer` at `offset`; resolves to how many. */
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<number>;
  size(): Promise<number>;
  /** fdatasync: the data written so far (and the size) on stable storage. */
  datasync(): Promise<void>;
  close(): Promise<void>;
}

export interface FileSystem {
  open(file: string, flags: OpenFlags): Promise<FileHandle>;
  readFile(file: string): Promise<Buffer>;
  /** The file's size, or null when there is none. */
  size(file: string): Promise<number | null>;
  rename(from: string, to: string): Promise<void>;
  unlink(file: string): Promise<void>;
  truncate(file: string, size: number): Promise<void>;
  readdir(dir: string): Promise<string[]>;
  /** Creates the directory (and its parents), private. */
  mkdir(dir: string): Promise<void>;
  /** Makes names created, renamed or removed in `dir` durable. */
  syncDirectory(dir: string): Promise<void>;
  /** Takes the data directory for this process; resolves to its release. */
  lock(dir: string): Promise<() => Promise<void>>;
  /** Makes the directory and the files in it private (file-modes.ts). */
  makePrivate(dir: string): Promise<void>;
}

/**
 * Writes up to this size go to the page cache straight from the event loop. Through libuv's
 * thread pool each one cost a hand-off to a pool thread and back (the server runs on one
 * core, so two context switches and a wake-up of the loop), three per card write, under the
 * tree's lock: more than the copy itself. Larger writes (an import's change, compaction's
 * chunks, backups) still go to the pool, so a big one never holds the loop.
 */
const WRITE_ON_LOOP_MAX = 64 * 1024;

class NodeHandle implements FileHandle {
  constructor(private readonly handle: NodeFileHandle) {}

  async write(data: Buffer | string, position?: number): Promise<void> {
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    let written = 0;
    if (bytes.length <= WRITE_ON_LOOP_MAX) {
      while (written < bytes.length) {
        written += writeSync(this.handle.fd, bytes, written, bytes.length - written, position === undefined ? null : position + written);
      }
      return;
    }
    while (written < bytes.length) {
      const at = position === undefined ? null : position + written;
      const { bytesWritten } = await this.handle.write(bytes, written, bytes.length - written, at);
      written += bytesWritten;
    }
  }

  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    return (await this.handle.read(buffer, offset, length, position)).bytesRead;
  }

  async size(): Promise<number> {
    return (await this.handle.stat()).size;
  }

  datasync(): Promise<void> {
    return this.handle.datasync();
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

export const nodeFileSystem: FileSystem = {
  open: async (file, flags) => new NodeHandle(flags === "r" ? await open(file, "r") : await openPrivate(file, flags)),
  readFile: (file) => readFile(file),
  size: async (file) => {
    try {
      return (await stat(file)).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
  },
  rename: (from, to) => rename(from, to),
  unlink: (file) => unlink(file),
  truncate: (file, size) => truncate(file, size),
  readdir: (dir) => readdir(dir),
  mkdir: async (dir) => {
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR });
  },
  syncDirectory: async (dir) => {
    const handle = await open(dir, "r");
    try {
      await handle.sync();
    } catch {
      // Some file systems refuse fsync on a directory; a rename is still atomic there.
    } finally {
      await handle.close();
    }
  },
  lock: (dir) => lockDataDir(dir),
  makePrivate: (dir) => tightenDirectory(dir),
};

/** Whether answers wait for stable storage (`SYNC`, src/config.ts); checkpoints, compaction and repairs always sync. */
export type SyncMode = "on" | "off";
