/**
 * Three-way merge of a card's text, line by line, with node-diff3 (a kept library, not a diff
 * of our own): `base` is the text both writers started from, `mine` and `theirs` what each
 * made of it. Lines changed on one side only are taken from that side; lines changed on both
 * sides differently are a conflict, written out between Git-style markers so a writer can
 * edit them into one text. Also the line differences between two texts, for showing them
 * side by side.
 */
import { diff3Merge, diffComm } from "node-diff3";

export interface MergeResult {
  /** True when no line was changed differently on both sides. */
  clean: boolean;
  /** The merged text; with conflicts, each conflicting block between markers. */
  text: string;
}

const lines = (text: string): string[] => text.split("\n");

export function mergeTexts(base: string, mine: string, theirs: string): MergeResult {
  // Both sides made the same change, or only one side changed anything: no merge to do.
  if (mine === theirs || theirs === base) return { clean: true, text: mine };
  if (mine === base) return { clean: true, text: theirs };
  const out: string[] = [];
  let clean = true;
  for (const region of diff3Merge(lines(mine), lines(base), lines(theirs), { excludeFalseConflicts: true })) {
    if (region.ok) out.push(...region.ok);
    else if (region.conflict) {
      clean = false;
      out.push("<<<<<<< yours", ...region.conflict.a, "=======", ...region.conflict.b, ">>>>>>> theirs");
    }
  }
  return { clean, text: out.join("\n") };
}

/** One line of a side-by-side view: the same on both sides, or only on this side. */
export interface DiffLine {
  text: string;
  changed: boolean;
}

/** Each text's lines, those not in the other text marked as changed. */
export function sideBySide(mine: string, theirs: string): { mine: DiffLine[]; theirs: DiffLine[] } {
  const left: DiffLine[] = [];
  const right: DiffLine[] = [];
  for (const part of diffComm(lines(mine), lines(theirs))) {
    if (part.common) {
      for (const text of part.common) {
        left.push({ text, changed: false });
        right.push({ text, changed: false });
      }
    } else {
      for (const text of part.buffer1) left.push({ text, changed: true });
      for (const text of part.buffer2) right.push({ text, changed: true });
    }
  }
  return { mine: left, theirs: right };
}

/** A conflict marker line left in a merge: its 1-based line number and its text. */
export interface LeftoverMarker {
  line: number;
  text: string;
}

const MARKER = /^(<{7}|={7}|>{7})(?:\s|$)/;

/**
 * The conflict markers (`<<<<<<<`, `=======`, `>>>>>>>` at a line's start) still in `text`. A
 * marker-like line that the writers' own texts (`sources`) hold as many times is theirs, not a
 * marker (a card about Git, a Markdown heading underlined with seven `=`): only the lines
 * beyond those counts are reported.
 */
export function leftoverMarkers(text: string, sources: string[] = []): LeftoverMarker[] {
  const allowed = new Map<string, number>();
  for (const source of sources) {
    const counts = new Map<string, number>();
    for (const line of lines(source)) if (MARKER.test(line)) counts.set(line, (counts.get(line) ?? 0) + 1);
    for (const [line, count] of counts) allowed.set(line, Math.max(allowed.get(line) ?? 0, count));
  }
  const seen = new Map<string, number>();
  const found: LeftoverMarker[] = [];
  lines(text).forEach((line, index) => {
    if (!MARKER.test(line)) return;
    const count = (seen.get(line) ?? 0) + 1;
    seen.set(line, count);
    if (count > (allowed.get(line) ?? 0)) found.push({ line: index + 1, text: line });
  });
  return found;
}
