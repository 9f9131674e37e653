/**
 * The data directory holds password hashes, session ids and the instance secret, so it
 * and everything the service writes there (and into backups) is private to the service's
 * user: directories 0700, files 0600, whatever the umask. Files an older version left
 * readable are tightened when the store opens.
 */
import { chmod, lstat, open, readdir, type FileHandle } from "node:fs/promises";
import path from "node:path";

export const PRIVATE_FILE = 0o600;
export const PRIVATE_DIR = 0o700;

/** Makes `dir` 0700 and the files directly in it 0600 (symbolic links are left alone). */
export async function tightenDirectory(dir: string): Promise<void> {
  await chmod(dir, PRIVATE_DIR);
  for (const name of await readdir(dir)) {
    const file = path.join(dir, name);
    const info = await lstat(file).catch(() => null);
    if (!info || info.isSymbolicLink()) continue;
    const wanted = info.isDirectory() ? PRIVATE_DIR : PRIVATE_FILE;
    if ((info.mode & 0o777) !== wanted) await chmod(file, wanted).catch(ignoreVanished);
  }
}

/** A file removed between listing and chmod (a compaction's temporary file) needs nothing. */
function ignoreVanished(err: NodeJS.ErrnoException): void {
  if (err.code !== "ENOENT") throw err;
}

/** Opens `file` (created 0600; an existing one is made 0600 too, as it is about to hold our data). */
export async function openPrivate(file: string, flags: string): Promise<FileHandle> {
  const handle = await open(file, flags, PRIVATE_FILE);
  try {
    await handle.chmod(PRIVATE_FILE);
  } catch (err) {
    await handle.close();
    throw err;
  }
  return handle;
}
