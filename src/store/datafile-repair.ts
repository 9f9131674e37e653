/**
 * Reading an NeDB datafile the way a crash may have left it. NeDB appends one line per
 * record and answers a write once its append is done, so a process killed mid-append
 * leaves at most the last append unfinished: a torn last line, and for a write of several
 * records (an import, a subtree sent to the trash) only some of its lines.
 *
 * A write of several records therefore marks each of its records with a `batch`
 * `{id, size}` (see nedb-store.ts). When the records at the end of the file share a batch
 * id but fewer than `size` of them are there, that append was cut short and all of it is
 * dropped: the write never answered, and all or nothing holds. Later lines for the same
 * `_id` supersede earlier ones, so dropping a cut update restores the records as they were.
 *
 * Only the tail is judged. A bad line elsewhere is not a crash but damage, and NeDB's own
 * corruption threshold still refuses to open such a file. The one exception is a NUL byte:
 * nothing the store writes holds one (JSON escapes it), and a power cut shows blocks that
 * were appended but never synced as zeros, possibly with later unsynced appends after them
 * (docs/reliability.md, "Power loss"). Everything from the line holding the first NUL on
 * was written after the last sync, so never acknowledged, and is dropped with it.
 */

/** Framing of a write of several records; lives on the record, never shown by the API. */
export interface BatchMark {
  id: string;
  size: number;
}

export interface Repair {
  /** The text to keep: complete lines only, each ending in "\n". */
  text: string;
  /** The torn last line that was dropped, if any (cut to 200 characters for a log). */
  tornLine: string | null;
  /** How many complete lines of a cut-short batch were dropped, and its id. */
  partialBatch: { id: string; lines: number; size: number } | null;
}

function batchOf(line: string): BatchMark | null {
  try {
    const doc = JSON.parse(line) as { batch?: BatchMark };
    const batch = doc.batch;
    if (batch && typeof batch.id === "string" && Number.isInteger(batch.size)) return batch;
    return null;
  } catch {
    return null;
  }
}

function parses(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/** The longest prefix of `text` that a finished sequence of appends could have written. */
export function repairDatafileText(text: string): Repair {
  let end = text.length;
  let tornLine: string | null = null;
  const nul = text.indexOf("\0");
  if (nul !== -1) {
    const start = text.lastIndexOf("\n", nul) + 1;
    tornLine = text.slice(start, Math.min(text.length, start + 200)).replace(/\0+/g, "\\0…");
    text = text.slice(0, start);
    end = start;
  }
  // A last line without its newline was being written when the process died, even if
  // the bytes so far happen to parse: the append it belongs to never finished.
  if (nul !== -1) {
    // Cut at a line start already.
  } else if (end > 0 && text[end - 1] !== "\n") {
    const start = text.lastIndexOf("\n", end - 1) + 1;
    tornLine = text.slice(start, end);
    end = start;
  } else if (end > 0) {
    // A complete last line that does not parse is a torn write whose newline made it.
    const start = text.lastIndexOf("\n", end - 2) + 1;
    const last = text.slice(start, end - 1);
    if (last !== "" && !parses(last)) {
      tornLine = last;
      end = start;
    }
  }

  let partialBatch: Repair["partialBatch"] = null;
  let cut = end;
  let runId: string | null = null;
  let runSize = 0;
  let runLines = 0;
  while (cut > 0) {
    const start = text.lastIndexOf("\n", cut - 2) + 1;
    const line = text.slice(start, cut - 1);
    const batch = line === "" ? null : batchOf(line);
    if (!batch || (runId !== null && batch.id !== runId)) break;
    runId = batch.id;
    runSize = batch.size;
    runLines++;
    cut = start;
  }
  if (runId !== null && runLines < runSize) {
    partialBatch = { id: runId, lines: runLines, size: runSize };
    end = cut;
  }

  return {
    text: text.slice(0, end),
    tornLine: tornLine === null ? null : tornLine.slice(0, 200),
    partialBatch,
  };
}
