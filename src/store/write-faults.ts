/**
 * Fault injection for the reliability tests, handed to the real adapter as an option
 * (`StoreOptions.faults`), never part of the Store port. `controlFileFaults(file)`: when
 * `file` exists and reads `enospc COLLECTION`, the next append to that collection writes
 * half its bytes (as a disk filling up mid-write does) and then fails with ENOSPC.
 * `enospc-stuck COLLECTION` also makes the undo fail, as a disk that went read-only would,
 * to drive the store into its failed state. The file is consumed by that one failure.
 * `hold-answer` (`answerHoldFault`) holds the next keyed answer for ever just before it
 * would be kept, after its change committed: the crash tests kill the process there.
 * `hold-step` (`stepHoldFault`) holds the next keyed request before its second command, once
 * its first has committed, until the file reads `release-step`: a test pauses the process
 * there (SIGSTOP) past the claim's lease.
 * The server wires it only when CARDTREE_FAULTS_FILE is set (src/server.ts).
 */
import { readFileSync, unlinkSync } from "node:fs";

export interface InjectedFault {
  code: "ENOSPC";
  /** The undo fails too. */
  stuck: boolean;
}

export interface WriteFaults {
  /** The fault to inject into this append of `collection`, if the test asked for one. */
  take(collection: string): InjectedFault | null;
}

export function controlFileFaults(control: string): WriteFaults {
  return { take: (collection) => takeFaultFrom(control, collection) };
}

function takeFaultFrom(control: string, collection: string): InjectedFault | null {
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

/**
 * Whether to hold this answer (the control file reads `hold-answer`; consumed by it), and
 * `told` is called then, so the test knows the commit is done and the answer held.
 */
export function answerHoldFault(control: string, told: () => void): () => boolean {
  return () => {
    let wanted: string;
    try {
      wanted = readFileSync(control, "utf8").trim();
    } catch {
      return false;
    }
    if (wanted !== "hold-answer") return false;
    unlinkSync(control);
    told();
    return true;
  };
}

/**
 * Whether to hold this keyed request before its next command (the control file reads
 * `hold-step`; consumed by it): then `told` is called and the returned promise resolves once
 * the file reads `release-step` (consumed too).
 */
export function stepHoldFault(control: string, told: () => void): () => Promise<void> | undefined {
  const reads = () => {
    try {
      return readFileSync(control, "utf8").trim();
    } catch {
      return "";
    }
  };
  return () => {
    if (reads() !== "hold-step") return undefined;
    unlinkSync(control);
    told();
    return new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (reads() !== "release-step") return;
        unlinkSync(control);
        clearInterval(poll);
        resolve();
      }, 20);
    });
  };
}

export function failedUndo(): never {
  throw Object.assign(new Error("EROFS: read-only file system (injected)"), { code: "EROFS" });
}

/** Writes the first half of `text` with `write`, then throws the error a full disk gives. */
export async function failLikeFullDisk(write: (half: string) => Promise<void>, file: string, text: string): Promise<never> {
  await write(text.slice(0, Math.floor(text.length / 2)));
  throw Object.assign(new Error(`ENOSPC: no space left on device, write (injected) '${file}'`), {
    code: "ENOSPC",
    errno: -28,
    syscall: "write",
  });
}
