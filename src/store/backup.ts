/**
 * Backups of a data directory while the server runs, and restoring one while it is
 * stopped. NeDB datafiles are append-only between compactions, and a compaction replaces a
 * file by renaming a complete new one over it; so a file opened at some moment and read up
 * to its size at that moment is a prefix of one file's history: whole appends, plus at most
 * one unfinished append at the end, which the crash repair drops (datafile-repair.ts).
 * The backup never takes the directory's lock and never writes to it.
 *
 * Across files, a record may refer only to records that are in the backup: files are
 * captured in the order sessions, scripts, trees, cards, change log, users, so each file is
 * captured before the ones its records refer to (a session or a script before its user, a
 * tree before its owner and its cards). The change log comes after the cards and trees
 * because it is their redo log (change-log.ts): it may hold changes the captured cards
 * lack, which the store applies when it opens the restored directory, but never lacks one
 * they hold. Cards captured without their tree are what a crash during tree creation
 * leaves, and the store sweeps them at open.
 */
import { copyFile, mkdir, rename, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import { CHANGE_LOG, repairChangeLogText } from "./change-log.js";
import { repairDatafileText } from "./datafile-repair.js";
import { lockDataDir } from "./data-dir-lock.js";
import { openPrivate, PRIVATE_DIR } from "./file-modes.js";
import { nodeFileSystem, type FileSystem } from "./file-system.js";
import { syncDirectory, writeFileSynced } from "./nedb-recovery.js";

/** Capture order; see the module comment. */
/** The embedded store's idempotency keys (idempotency-file.ts): not backed up, a key lives a day. */
const IDEMPOTENCY_LOG = "idempotency.log";
const CAPTURE_ORDER = ["sessions.db", "scripts.db", "trees.db", "cards.db", CHANGE_LOG, "users.db"] as const;
/** Backups made before the change log existed lack it. */
const OPTIONAL = new Set<string>([CHANGE_LOG]);
const SETTINGS = "settings.json";
const MANIFEST = "BACKUP.json";

interface Captured {
  name: string;
  text: string;
  droppedBytes: number;
}

const repairDatafile = (text: string) => repairDatafileText(text).text;

async function capture(fs: FileSystem, file: string, repair: (text: string) => string): Promise<{ text: string; droppedBytes: number }> {
  let handle;
  try {
    handle = await fs.open(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { text: "", droppedBytes: 0 };
    throw err;
  }
  try {
    const size = await handle.size();
    const bytes = Buffer.alloc(size);
    let read = 0;
    while (read < size) {
      const bytesRead = await handle.read(bytes, read, size - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    const text = bytes.subarray(0, read).toString("utf8");
    const repaired = repair(text);
    return { text: repaired, droppedBytes: Buffer.byteLength(text) - Buffer.byteLength(repaired) };
  } finally {
    await handle.close();
  }
}

export interface BackupReport {
  files: { name: string; bytes: number; droppedBytes: number }[];
}

/**
 * Writes a consistent snapshot of `dataDir` into `targetDir` (created; must be empty).
 * Safe while a server owns `dataDir`.
 */
export async function backupDataDir(dataDir: string, targetDir: string, fs: FileSystem = nodeFileSystem): Promise<BackupReport> {
  if ((await fs.size(path.join(dataDir, "users.db"))) === null) throw new Error(`${dataDir} holds no Cardtree data.`);
  await fs.mkdir(targetDir);
  if ((await fs.readdir(targetDir)).length > 0) throw new Error(`${targetDir} is not empty; back up into a new directory.`);
  // It will hold the password hashes and the secret: as private as the data directory.
  await fs.makePrivate(targetDir);
  const captured: Captured[] = [];
  for (const name of CAPTURE_ORDER) {
    const { text, droppedBytes } = await capture(fs, path.join(dataDir, name), name === CHANGE_LOG ? repairChangeLogText : repairDatafile);
    captured.push({ name, text, droppedBytes });
  }
  for (const { name, text } of captured) await writeFileSynced(path.join(targetDir, name), text, fs);
  // The secret keys session cookies: without it, restored sessions would not open.
  await writeFileSynced(path.join(targetDir, SETTINGS), await fs.readFile(path.join(dataDir, SETTINGS)), fs);
  const report: BackupReport = {
    files: captured.map((c) => ({ name: c.name, bytes: Buffer.byteLength(c.text), droppedBytes: c.droppedBytes })),
  };
  await writeFileSynced(path.join(targetDir, MANIFEST), JSON.stringify({ createdAt: new Date().toISOString(), ...report }, null, 2), fs);
  // Every file above was synced as written; the names in the directory, and the directory's
  // own name in its parent (it may be new), are synced before the backup says it is done.
  await syncDirectory(targetDir, fs);
  await syncDirectory(path.dirname(path.resolve(targetDir)), fs);
  return report;
}

/**
 * Replaces the data in `dataDir` with the backup in `backupDir`. Needs the directory's
 * lock, so it refuses while a server runs. Each file is copied beside its target and
 * renamed over it, so a file is never half restored; an interrupted restore is finished by
 * running it again.
 */
export async function restoreDataDir(backupDir: string, dataDir: string): Promise<void> {
  if (!existsSync(path.join(backupDir, MANIFEST))) throw new Error(`${backupDir} is not a Cardtree backup (no ${MANIFEST}).`);
  await mkdir(dataDir, { recursive: true, mode: PRIVATE_DIR });
  const unlock = await lockDataDir(dataDir);
  try {
    const names = [...CAPTURE_ORDER, SETTINGS];
    for (const name of names) {
      if (OPTIONAL.has(name) && !existsSync(path.join(backupDir, name))) {
        // Nothing to restore: no log beside the restored records either.
        await rm(path.join(dataDir, name), { force: true });
        continue;
      }
      const staged = path.join(dataDir, `${name}.restoring`);
      // A collection newer than the backup (scripts.db) restores empty.
      if (!existsSync(path.join(backupDir, name)) && name === "scripts.db") await writeFileSynced(staged, "");
      else await copyFile(path.join(backupDir, name), staged);
      const handle = await openPrivate(staged, "r+");
      await handle.sync();
      await handle.close();
    }
    for (const name of names) {
      if (!existsSync(path.join(dataDir, `${name}.restoring`))) continue;
      await rename(path.join(dataDir, `${name}.restoring`), path.join(dataDir, name));
      // A compaction's leftover would otherwise stand beside the restored file.
      await rm(path.join(dataDir, `${name}~`), { force: true });
    }
    // Kept idempotency answers (SPEC §13) tell of writes the restored data may not hold: a
    // retry replaying "created" for a card the restore took away would lose it. They go.
    await rm(path.join(dataDir, IDEMPOTENCY_LOG), { force: true });
    await syncDirectory(dataDir);
    await syncDirectory(path.dirname(path.resolve(dataDir)));
  } finally {
    await unlock();
  }
}
