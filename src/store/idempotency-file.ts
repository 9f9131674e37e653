/**
 * Idempotency keys in the embedded store (SPEC §13): `idempotency.log` in the data
 * directory, one JSON line per kept answer, and the keys in memory.
 *
 * Why not a NeDB collection like the others: a keyed write would pay two NeDB writes
 * (claim, then answer), each a deep copy, an index update, a stat and an append, about
 * 0.2 ms of CPU apiece, where the write itself costs about 1 ms; the target is 10%
 * (docs/performance.md, "Idempotency keys"). Here a keyed write costs one append:
 *
 * - Running claims live in memory only. One process owns the data directory, so a claim
 *   can only be held by this process, and if it dies, its claims die with it, which is
 *   what a lease running out means on PostgreSQL. A claim is taken synchronously, so two
 *   requests with one key cannot both take it.
 * - A completed answer is appended (`{"k": id, "r": record}`) before `complete` resolves,
 *   so an answer the client received is on disk; answers completed while an append is on
 *   its way go out together in the next one. A failed append is cut off the file again
 *   and reported; the answer stays in memory, served until the process ends.
 * - An answer kept `lazily` (its request committed a change that carries the key, durably,
 *   in changes.log) is in memory at once and written LAZY_WRITE_MS later with the others
 *   kept meanwhile, or with the next flushed append, without a flush of its own; a crash
 *   that loses it leaves the keyed change without a kept answer, which `adopt` turns into
 *   a dead claim at open, so the retry answers from the change.
 * - The sweep drops records from memory and, once dropped and superseded lines outnumber
 *   the kept ones, rewrites the file beside itself and renames it in (appends wait for it).
 * - At open, the file is read whole; a torn last line (a crash mid-append) was never
 *   acknowledged and is dropped, like the other files' (reliability.md).
 * - `adopt`: the store hands over, at open, the claims a crash left (keys whose change is in
 *   the change log and whose answer is not here), as claims whose lease ended: the next
 *   request with the key takes it over and answers from the change.
 */
import { isUtf8 } from "node:buffer";
import path from "node:path";
import { nodeFileSystem, type FileHandle, type FileSystem, type SyncMode } from "./file-system.js";
import type { IdempotencyRecord, IdempotencyRepository, KeptAnswer } from "../domain/ports/store.js";
import { idempotencyId, recordsToSweep, type SweptRecord } from "./idempotency-records.js";

/**
 * How long an answer kept lazily (its request's change, logged with the key, answers for it
 * after a crash) waits in memory before it is written, with those kept meanwhile.
 */
const LAZY_WRITE_MS = 100;

/** How many kept keys a sweep reads in one task (a few milliseconds of them). */
const SWEEP_SLICE = 5_000;

/** A kept answer's body as JSON can hold it: answers are JSON (UTF-8 text); other bytes in base64. */
interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  base64?: true;
}
type StoredRecord = Omit<IdempotencyRecord, "answer" | "claim"> & { answer: StoredAnswer };

function storedAnswer(answer: KeptAnswer): StoredAnswer {
  if (answer.text !== undefined) return { status: answer.status, headers: answer.headers, body: answer.text };
  const bytes = Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength);
  const text = isUtf8(bytes);
  return { status: answer.status, headers: answer.headers, body: bytes.toString(text ? "utf8" : "base64"), ...(text ? {} : { base64: true as const }) };
}

function answerOf(stored: StoredAnswer): KeptAnswer {
  return { status: stored.status, headers: { ...stored.headers }, body: Buffer.from(stored.body, stored.base64 ? "base64" : "utf8") };
}

/**
 * A kept answer in memory: its line as the file has it (without the newline), and what the
 * sweep reads. The record itself is parsed again from the line when a replay asks for it
 * (rare); a keyed write kept whole (record, answer, headers, body) left the garbage
 * collector about ten objects to trace and promote per write, this leaves three (issue 26's 10%).
 */
interface Kept {
  line: string;
  userId: string;
  createdAt: string;
  expiresAt: string;
  /** The body's bytes (the per-user bound). */
  bytes: number;
}

function recordOf(kept: Kept): IdempotencyRecord {
  const stored = (JSON.parse(kept.line) as { r: StoredRecord }).r;
  return { ...stored, answer: answerOf(stored.answer) };
}

/**
 * Lines (each without its newline) as one buffer, written straight into it: joined into one
 * string first, or each ended by a concatenated newline, every line was copied twice more.
 */
function linesAsBytes(lines: readonly string[]): Buffer {
  let length = lines.length;
  for (const line of lines) length += Buffer.byteLength(line);
  const bytes = Buffer.allocUnsafe(length);
  let at = 0;
  for (const line of lines) {
    at += bytes.write(line, at);
    bytes[at++] = 0x0a;
  }
  return bytes;
}

/** The repository on `file`, loaded; `close` releases the file. */
export async function openIdempotencyFile(
  file: string,
  log: (message: string, fields: Record<string, unknown>) => void,
  /** Through the store's file-system port; with `sync` on, an answer is kept once it is on stable storage (issue 32). */
  { fs = nodeFileSystem, sync = "on" }: { fs?: FileSystem; sync?: SyncMode } = {},
): Promise<IdempotencyRepository & { adopt(claims: readonly IdempotencyRecord[]): void; close(): Promise<void> }> {
  const kept = new Map<string, Kept>();
  const running = new Map<string, IdempotencyRecord>();
  let lines = 0;
  let text = "";
  try {
    text = (await fs.readFile(file)).toString("utf8");
  } catch (err) {
    if ((err as { code?: string }).code !== "ENOENT") throw err;
  }
  // A power cut leaves unsynced blocks as zeros: from the line holding the first NUL on, nothing was acknowledged.
  const nul = text.indexOf("\0");
  const tornAt = nul === -1 ? -1 : text.lastIndexOf("\n", nul) + 1;
  const unwritten = tornAt === -1 ? "" : text.slice(tornAt);
  if (tornAt !== -1) text = text.slice(0, tornAt);
  let size = Buffer.byteLength(text);
  const all = text.split("\n");
  const last = all.pop() ?? "";
  if (last !== "") {
    // A torn last line: the append it was never finished, nor acknowledged.
    size -= Buffer.byteLength(last);
    log("dropped a torn last line of idempotency.log", { bytes: Buffer.byteLength(last) });
  }
  for (const line of all) {
    if (line === "") continue;
    const entry = JSON.parse(line) as { k: string; r: StoredRecord };
    const { userId, createdAt, expiresAt, answer } = entry.r;
    kept.set(entry.k, { line, userId, createdAt, expiresAt, bytes: Buffer.byteLength(answer.body, answer.base64 ? "base64" : "utf8") });
    lines++;
  }
  if (unwritten !== "") log("dropped the unwritten end of idempotency.log after a power cut", { bytes: Buffer.byteLength(unwritten) });
  const created = (await fs.size(file)) === null;
  let handle: FileHandle = await fs.open(file, "a+");
  if (created) await fs.syncDirectory(path.dirname(file));
  if (last !== "" || unwritten !== "") {
    await fs.truncate(file, size);
    await handle.datasync();
  }

  /** Appends and rewrites, one at a time and in order. */
  let queue: Promise<unknown> = Promise.resolve();
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const result = queue.then(work, work);
    queue = result.catch(() => undefined);
    return result;
  };

  /**
   * Appends are grouped: lines handed in while a write is on its way go out together in
   * the next one (one system call for many keyed writes under load), each caller resolved
   * once its line is written. Lines are handed in without their newline (`linesAsBytes`).
   */
  let waiting: string[] = [];
  let waitingSync = false;
  let nextWrite: Promise<void> | null = null;
  /** Lines of answers kept lazily, not yet handed to `append`: written together every LAZY_WRITE_MS. */
  let deferred: string[] = [];
  let deferredTimer: NodeJS.Timeout | null = null;
  const append = (line: string, flush = true): Promise<void> => {
    if (deferred.length > 0) {
      waiting.push(...deferred);
      deferred = [];
    }
    waiting.push(line);
    if (flush) waitingSync = true;
    nextWrite ??= serially(async () => {
      const group = waiting;
      const flushGroup = waitingSync;
      waiting = [];
      waitingSync = false;
      nextWrite = null;
      const bytes = linesAsBytes(group);
      try {
        await handle.write(bytes);
        if (sync === "on" && flushGroup) await handle.datasync();
        size += bytes.length;
        lines += group.length;
      } catch (err) {
        await fs.truncate(file, size).catch((cut: unknown) => log("could not cut a failed append off idempotency.log", { error: String(cut) }));
        throw err;
      }
    });
    return nextWrite;
  };
  /** Hands the lazily kept lines to `append` (no flush of their own). */
  const writeDeferred = (): Promise<void> => {
    if (deferredTimer) clearTimeout(deferredTimer);
    deferredTimer = null;
    const lines = deferred;
    deferred = [];
    if (lines.length === 0) return Promise.resolve();
    const last = lines.pop()!;
    waiting.push(...lines);
    return append(last, false).catch((err: unknown) => log("writing lazily kept answers to idempotency.log failed", { error: String(err) }));
  };

  /** Writes the kept records beside the file and renames the copy in. */
  const rewrite = () =>
    serially(async () => {
      const copy = `${file}~`;
      const out = await fs.open(copy, "w");
      let written = 0;
      let count = 0;
      try {
        let chunk = "";
        for (const { line } of kept.values()) {
          chunk += `${line}\n`;
          count++;
          if (chunk.length > 1 << 20) {
            await out.write(chunk);
            written += Buffer.byteLength(chunk);
            chunk = "";
          }
        }
        await out.write(chunk);
        written += Buffer.byteLength(chunk);
        await out.datasync();
      } finally {
        await out.close();
      }
      await fs.rename(copy, file);
      await fs.syncDirectory(path.dirname(file));
      await handle.close();
      handle = await fs.open(file, "a+");
      size = written;
      lines = count;
    });

  const claimNow = (record: IdempotencyRecord): IdempotencyRecord | null => {
    const id = idempotencyId(record.userId, record.key);
    const there = running.get(id);
    if (there) return { ...there };
    const done = kept.get(id);
    if (done) return recordOf(done);
    // Records of running claims are flat (no answer yet): a spread copies them whole.
    running.set(id, { ...record });
    return null;
  };
  /**
   * Keeps the answer: its line (no newline) to append when it must be flushed first, null
   * when kept lazily, false when the claim is not running here (nothing kept).
   */
  const completeNow = (userId: string, key: string, claim: string, answer: KeptAnswer, lazily: boolean): string | null | false => {
    const id = idempotencyId(userId, key);
    const record = running.get(id);
    if (record?.claim !== claim) return false;
    running.delete(id);
    const stored: StoredRecord = {
      userId: record.userId,
      key: record.key,
      fingerprint: record.fingerprint,
      leaseUntil: record.leaseUntil,
      createdAt: record.createdAt,
      expiresAt: record.expiresAt,
      answer: storedAnswer(answer),
    };
    const json = JSON.stringify({ k: id, r: stored });
    kept.set(id, { line: json, userId: record.userId, createdAt: record.createdAt, expiresAt: record.expiresAt, bytes: answer.body.byteLength });
    if (!lazily) return json;
    // The change logged with the key answers for it after a crash (adopt, at open).
    deferred.push(json);
    deferredTimer ??= setTimeout(() => void writeDeferred(), LAZY_WRITE_MS);
    deferredTimer.unref();
    return null;
  };

  return {
    claim: async (record) => claimNow(record),
    claimNow,
    takeOver: async (record, previousClaim) => {
      const id = idempotencyId(record.userId, record.key);
      if (running.get(id)?.claim !== previousClaim) return false;
      running.set(id, { ...record });
      return true;
    },
    renew: async (userId, key, claim, leaseUntil) => {
      const record = running.get(idempotencyId(userId, key));
      if (record?.claim !== claim) return false;
        record.leaseUntil = leaseUntil;
        return true;
    },
    complete: async (userId, key, claim, answer, options) => {
      const line = completeNow(userId, key, claim, answer, options?.lazily === true);
      if (typeof line === "string") await append(line);
    },
    // False for a claim not running here, as the port says: `complete` then decides.
    completeLazilyNow: (userId, key, claim, answer) => completeNow(userId, key, claim, answer, true) !== false,
    release: async (userId, key, claim) => {
      const id = idempotencyId(userId, key);
      if (running.get(id)?.claim === claim) running.delete(id);
    },
    sweep: async (now, most) => {
      let dropped = 0;
      for (const [id, record] of running) {
        if (record.expiresAt < now) {
          running.delete(id);
          dropped++;
        }
      }
      // Read in slices, a task each, so requests are answered meanwhile: a user past the
      // per-user bound can hold tens of thousands of keys (a minute of a bench's writes is
      // 90,000), and one pass over them all stalled the event loop for 100-700 ms (helper
      // keycost4, session 20). A key answered meanwhile is read too (the iterator goes on
      // over what is added); a key kept here can only go by a sweep.
      const keptRecords: (SweptRecord & { id: string })[] = [];
      for (const [id, record] of kept) {
        const { userId, createdAt, expiresAt, bytes } = record;
        keptRecords.push({ userId, key: id.slice(userId.length + 1), createdAt, expiresAt, bytes, id });
        if (keptRecords.length % SWEEP_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      // Two sweeps at once (one slow, the next one's minute come) drop a key once.
      for (const record of recordsToSweep(keptRecords, now, most)) if (kept.delete(record.id)) dropped++;
      if (lines > 1000 && lines > 2 * kept.size) await rewrite();
      return dropped;
    },
    adopt: (claims) => {
      for (const record of claims) {
        const id = idempotencyId(record.userId, record.key);
        if (!kept.has(id) && !running.has(id)) running.set(id, { ...record });
      }
    },
    close: async () => {
      await writeDeferred();
      await serially(() => handle.close());
    },
  };
}
