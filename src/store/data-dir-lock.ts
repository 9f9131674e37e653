/**
 * One process at a time owns a data directory: NeDB keeps the whole store in memory and
 * appends to its files, so a second writer (a CLI run while the server is up) would
 * corrupt both views. The lock file names the owner's pid; a lock left by a process that
 * is gone (a crash) is taken over.
 */
import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** @throws Error naming the process that holds the directory. */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, "LOCK");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      return () => {
        try {
          if (readFileSync(file, "utf8") === String(process.pid)) unlinkSync(file);
        } catch {
          // Already gone: nothing to release.
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = Number(readFileSync(file, "utf8"));
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
        throw new Error(`The data directory ${dataDir} is in use by process ${holder}. Stop it first.`, { cause: err });
      }
      unlinkSync(file);
    }
  }
  throw new Error(`Could not lock the data directory ${dataDir}.`);
}
