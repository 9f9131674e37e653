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
