/**
 * Bringing an NeDB datafile back to a state some finished sequence of writes produced:
 * at open, after a crash (torn last line, cut-short batch; datafile.ts), and after a failed
 * append, when NeDB has already changed its in-memory copy and the file holds part of the
 * write. File I/O goes through the store's file-system port (file-system.ts).
 */
import path from "node:path";
import { createRequire } from "node:module";
import { repairDatafileText } from "./datafile-repair.js";
import { nodeFileSystem, type FileSystem } from "./file-system.js";

type Doc = Record<string, unknown>;

const require = createRequire(import.meta.url);
/** NeDB's own line format (dates as `$$date`), so what we write it reads back unchanged. */
export const nedbModel = require("@seald-io/nedb/lib/model.js") as {
  serialize(doc: unknown): string;
  deserialize(line: string): Doc;
  /** A (possibly dotted, possibly compound "a,b") field's value, as NeDB's indexes read it. */
  getDotValues(doc: Doc, fields: string[]): unknown;
  /** NeDB's order of any two values. */
  compareThings(a: unknown, b: unknown): number;
};

export type RepairLog = (message: string, fields: Record<string, unknown>) => void;

/** Writes `content` to `file` (mode 0600) and syncs it to disk before resolving. */
export async function writeFileSynced(file: string, content: string | Buffer, fs: FileSystem = nodeFileSystem): Promise<void> {
  const handle = await fs.open(file, "w");
  try {
    await handle.write(content);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** Writes `text` to `file` so that a crash leaves either the old or the new content. */
export async function replaceFileDurably(file: string, text: string | Buffer, fs: FileSystem = nodeFileSystem): Promise<void> {
  const temp = `${file}.repair`;
  await writeFileSynced(temp, text, fs);
  await fs.rename(temp, file);
  await fs.syncDirectory(path.dirname(file));
}

export function syncDirectory(dir: string, fs: FileSystem = nodeFileSystem): Promise<void> {
  return fs.syncDirectory(dir);
}

/** An index definition as NeDB writes it into the datafile (`$$indexCreated`). */
export interface IndexDefinition {
  fieldName: string;
  unique?: boolean;
  sparse?: boolean;
}

export interface ParsedDatafile {
  /** The live records, as NeDB would hold them after loading the file. */
  docs: Doc[];
  /** Index definitions still in force (`$$indexCreated` not followed by `$$indexRemoved`). */
  indexes: IndexDefinition[];
  /** Non-empty lines read, and how many of them did not parse. */
  lines: number;
  corrupt: number;
}

/**
 * Replays a datafile as NeDB's loader does (later lines win, `$$deleted` removes, index
 * definitions collected), in one synchronous pass over text already in memory. NeDB's own
 * loader streams the file and awaits a promise per line, and parses every line with a
 * reviver for `$$date`; a line without `$$date` parses the same with plain `JSON.parse`,
 * at a fraction of the cost. Batch marks are dropped from the records: they frame an
 * append on disk (datafile-repair.ts) and mean nothing once the file has been judged.
 */
export function parseDatafile(text: string): ParsedDatafile {
  const byId = new Map<string, Doc>();
  const indexes = new Map<string, IndexDefinition>();
  let lines = 0;
  let corrupt = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    if (line === "") continue;
    lines++;
    let doc: Doc;
    try {
      doc = line.includes('"$$date"') ? nedbModel.deserialize(line) : (JSON.parse(line) as Doc);
    } catch {
      corrupt++;
      continue;
    }
    if (doc === null || typeof doc !== "object") {
      corrupt++;
      continue;
    }
    const id = doc._id;
    if (typeof id === "string" && id !== "") {
      if (doc.$$deleted === true) byId.delete(id);
      else {
        if ("batch" in doc) delete doc.batch;
        byId.set(id, doc);
      }
    } else if (isIndexDefinition(doc.$$indexCreated)) {
      indexes.set(doc.$$indexCreated.fieldName, doc.$$indexCreated);
    } else if (typeof doc.$$indexRemoved === "string") {
      indexes.delete(doc.$$indexRemoved);
    }
  }
  return { docs: [...byId.values()], indexes: [...indexes.values()], lines, corrupt };
}

function isIndexDefinition(value: unknown): value is IndexDefinition {
  return typeof value === "object" && value !== null && typeof (value as IndexDefinition).fieldName === "string";
}

/**
 * The records a datafile holds, replayed as NeDB does, after dropping an unfinished tail.
 * Index definitions are skipped: the caller keeps the ones it has.
 */
export async function docsFromDatafile(file: string, fs: FileSystem = nodeFileSystem): Promise<Doc[]> {
  return parseDatafile(repairDatafileText((await fs.readFile(file)).toString("utf8")).text).docs;
}
