/**
 * The embedded store's datafiles, read and written by our code (NeDB's line format; NeDB
 * itself never sees a file, embedded-collections.ts): the line format, replaying a file
 * into its records, and writing a file so that a crash leaves it whole. File I/O goes
 * through the store's file-system port (file-system.ts).
 */
import path from "node:path";
import { repairDatafileText } from "./datafile-repair.js";
import { nodeFileSystem, type FileSystem } from "./file-system.js";

type Doc = Record<string, unknown>;

/**
 * A record as one line of a datafile: its JSON. The format is NeDB's (so a datafile NeDB
 * wrote opens, and one this code writes is one NeDB could read), written and read by this
 * code: a record never holds a Date (the store's times are ISO strings), so the one thing
 * beyond JSON that NeDB's format has, a Date as `{"$$date": ms}`, is only read back.
 */
export function recordLine(doc: object): string {
  return JSON.stringify(doc);
}

function reviveDate(_key: string, value: unknown): unknown {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "$$date") return new Date((value as { $$date: number }).$$date);
  }
  return value;
}

/** One line back into a record (throws when it does not parse). */
export function parseRecordLine(line: string): unknown {
  return line.includes('"$$date"') ? JSON.parse(line, reviveDate) : JSON.parse(line);
}

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
      doc = parseRecordLine(line) as Doc;
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
