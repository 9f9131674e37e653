/**
 * Bringing an NeDB datafile back to a state some finished sequence of writes produced:
 * at open, after a crash (torn last line, cut-short batch), and after a failed append,
 * when NeDB has already changed its in-memory copy and the file holds part of the write.
 */
import { open, readFile, rename, stat, truncate } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { repairDatafileText, type Repair } from "./datafile-repair.js";

type Doc = Record<string, unknown>;

const require = createRequire(import.meta.url);
/** NeDB's own line format (dates as `$$date`), so what we write it reads back unchanged. */
export const nedbModel = require("@seald-io/nedb/lib/model.js") as {
  serialize(doc: unknown): string;
  deserialize(line: string): Doc;
};

export type RepairLog = (message: string, fields: Record<string, unknown>) => void;

/** Writes `text` to `file` so that a crash leaves either the old or the new content. */
export async function replaceFileDurably(file: string, text: string | Buffer): Promise<void> {
  const temp = `${file}.repair`;
  const handle = await open(temp, "w");
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, file);
  await syncDirectory(path.dirname(file));
}

export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on a directory; the rename is still atomic there.
  } finally {
    await handle.close();
  }
}

function describe(repair: Repair): Record<string, unknown> {
  return {
    tornLine: repair.tornLine,
    partialBatch: repair.partialBatch,
  };
}

/**
 * Before NeDB loads `file`: drops a torn tail and a cut-short batch, and logs what went.
 * A missing datafile with a complete `~` beside it (a crash between NeDB's unlink and
 * rename cannot happen, but an older NeDB did that) is left for NeDB to take over.
 */
export async function repairDatafileOnDisk(file: string, log: RepairLog): Promise<void> {
  if (!existsSync(file)) return;
  const text = await readFile(file, "utf8");
  const repair = repairDatafileText(text);
  if (repair.text.length === text.length) return;
  log("store file repaired after a crash: dropped an unfinished write", {
    file: path.basename(file),
    droppedBytes: Buffer.byteLength(text) - Buffer.byteLength(repair.text),
    ...describe(repair),
  });
  await replaceFileDurably(file, repair.text);
}

/**
 * The records a datafile holds, replayed as NeDB does (later lines win, `$$deleted`
 * removes), after dropping an unfinished tail. Index definitions are skipped: the caller
 * keeps the ones it has.
 */
export async function docsFromDatafile(file: string): Promise<Doc[]> {
  const { text } = repairDatafileText(await readFile(file, "utf8"));
  const byId = new Map<string, Doc>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    let doc: Doc;
    try {
      doc = nedbModel.deserialize(line);
    } catch {
      continue;
    }
    const id = doc._id;
    if (typeof id !== "string") continue;
    if (doc.$$deleted === true) byId.delete(id);
    else byId.set(id, doc);
  }
  return [...byId.values()];
}

export async function fileSize(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw err;
  }
}

/** Cuts off whatever part of a failed append reached the file. */
export function truncateTo(file: string, size: number): Promise<void> {
  return truncate(file, size);
}
