/**
 * `backup DIR`: a consistent copy of the data directory, taken while the server runs (it
 * only reads; see src/store/backup.ts). `restore DIR`: puts a backup in place of the data
 * directory's content, with the server stopped, then opens the store once to check it.
 */
import type { Config } from "../config.js";
import { backupDataDir, restoreDataDir } from "../store/backup.js";
import { openNedbStore } from "../store/nedb-store.js";
import { UsageError } from "./usage.js";

/** Backup and restore copy NeDB's files; a PostgreSQL database is backed up with its own tools. */
function refusePostgres(config: Config, command: string): void {
  if (config.store.engine === "postgres") {
    throw new Error(
      `${command} works on the embedded store's data directory; with STORE=postgres use PostgreSQL's own tools (pg_dump, pg_restore, or continuous archiving), see docs/scaling.md.`,
    );
  }
}

export async function backupCommand(config: Config, rest: string[]): Promise<void> {
  refusePostgres(config, "backup");
  const [target] = rest;
  if (!target || rest.length > 1) throw new UsageError("Name one directory to write the backup into.");
  const report = await backupDataDir(config.dataDir, target);
  for (const file of report.files) {
    const note = file.droppedBytes > 0 ? ` (left out ${file.droppedBytes} bytes of a write in progress)` : "";
    process.stdout.write(`${file.name}: ${file.bytes} bytes${note}\n`);
  }
  process.stdout.write(`Backup of ${config.dataDir} written to ${target}.\n`);
}

export async function restoreCommand(config: Config, rest: string[]): Promise<void> {
  refusePostgres(config, "restore");
  const [source] = rest;
  if (!source || rest.length > 1) throw new UsageError("Name the backup directory to restore from.");
  await restoreDataDir(source, config.dataDir);
  // Opening checks every file loads, repairs nothing left unfinished, and sweeps stray cards.
  const store = await openNedbStore(config.dataDir);
  const users = (await store.users.list()).length;
  await store.close();
  process.stdout.write(`Restored ${source} into ${config.dataDir} (${users} users).\n`);
}
