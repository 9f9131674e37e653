/**
 * A fault-injection hook inside the real adapter, for the reliability tests: when
 * CARDTREE_FAULTS_FILE names a file that exists and reads `enospc COLLECTION`, the next
 * append to that collection writes half its bytes (as a disk filling up mid-write does)
 * and then fails with ENOSPC. `enospc-stuck COLLECTION` also makes the undo fail, as a
 * disk that went read-only would, to drive the store into its failed state. The file is
 * consumed by that one failure. Without the variable this costs nothing.
 */
import { appendFileSync, readFileSync, unlinkSync } from "node:fs";

export interface InjectedFault {
  code: "ENOSPC";
  /** The undo fails too. */
  stuck: boolean;
}

/** The fault to inject into this append of `collection`, if the test asked for one. */
export function takeInjectedFault(collection: string): InjectedFault | null {
  const control = process.env.CARDTREE_FAULTS_FILE;
  if (!control) return null;
  let wanted: string;
  try {
    wanted = readFileSync(control, "utf8").trim();
  } catch {
    return null;
  }
  if (wanted !== `enospc ${collection}` && wanted !== `enospc-stuck ${collection}`) return null;
  unlinkSync(control);
  return { code: "ENOSPC", stuck: wanted.startsWith("enospc-stuck") };
}

export function failedUndo(): never {
  throw Object.assign(new Error("EROFS: read-only file system (injected)"), { code: "EROFS" });
}

/** Writes the first half of `text`, then throws the error a full disk gives. */
export function failLikeFullDisk(file: string, text: string): never {
  appendFileSync(file, text.slice(0, Math.floor(text.length / 2)));
  throw Object.assign(new Error(`ENOSPC: no space left on device, write (injected) '${file}'`), {
    code: "ENOSPC",
    errno: -28,
    syscall: "write",
  });
}
