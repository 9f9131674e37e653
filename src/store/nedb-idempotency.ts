/**
 * Idempotency keys in the embedded store (SPEC §13): one NeDB datafile of their own,
 * `idempotency.db`, one document per user and key (`_id` "<userId> <key>"). NeDB runs one
 * operation at a time, and each step here is one operation (an insert refused for a taken
 * `_id`, an update or remove conditioned on the claim), so the steps are atomic; one
 * process owns the data directory, so nothing else writes between them.
 *
 * Not among the records `migrate` copies or a backup holds: a key lives a day.
 */
import { isUtf8 } from "node:buffer";
import type Datastore from "nedb-promises";
import type { IdempotencyRecord, IdempotencyRepository, KeptAnswer } from "../domain/ports/store.js";
import { idempotencyId, recordsToSweep } from "./idempotency-records.js";

type Doc = Record<string, unknown>;

/** The kept body as NeDB can hold it: answers are JSON, so UTF-8 text; other bytes in base64. */
function storedBody(body: Uint8Array): { body: string; base64?: true } {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return isUtf8(bytes) ? { body: bytes.toString("utf8") } : { body: bytes.toString("base64"), base64: true };
}

function answerFields(answer: KeptAnswer): Doc {
  return { status: answer.status, headers: answer.headers, bytes: answer.body.byteLength, ...storedBody(answer.body) };
}

function toDoc(record: IdempotencyRecord): Doc {
  const { answer, ...rest } = record;
  return { _id: idempotencyId(record.userId, record.key), ...rest, ...(answer ? answerFields(answer) : { bytes: 0 }) };
}

function fromDoc(doc: Doc): IdempotencyRecord {
  const { _id: _ignored, status, headers, body, base64, bytes: _bytes, ...rest } = doc;
  const record = rest as unknown as IdempotencyRecord;
  if (typeof status === "number") {
    record.answer = {
      status,
      headers: headers as Record<string, string>,
      body: Buffer.from(body as string, base64 ? "base64" : "utf8"),
    };
  }
  return record;
}

function isUniqueViolation(err: unknown): boolean {
  return (err as { errorType?: unknown } | null)?.errorType === "uniqueViolated";
}

/**
 * The repository on `db`; `allDocs` reads NeDB's memory without copying (the sweep looks
 * at every record, and copying each kept body to look at its size would cost more).
 */
export function nedbIdempotency(db: Datastore<Doc>, allDocs: () => Doc[]): IdempotencyRepository {
  return {
    claim: async (record) => {
      try {
        await db.insert(toDoc(record));
        return null;
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
      const there = await db.findOne({ _id: idempotencyId(record.userId, record.key) });
      // Swept between the refused insert and this read: claim it again.
      if (!there) return nedbIdempotency(db, allDocs).claim(record);
      return fromDoc(there as Doc);
    },
    takeOver: async (record, previousClaim) => {
      const replaced = await db.update({ _id: idempotencyId(record.userId, record.key), claim: previousClaim }, toDoc(record), {});
      return replaced === 1;
    },
    renew: async (userId, key, claim, leaseUntil) => {
      await db.update({ _id: idempotencyId(userId, key), claim }, { $set: { leaseUntil } }, {});
    },
    complete: async (userId, key, claim, answer) => {
      await db.update({ _id: idempotencyId(userId, key), claim }, { $unset: { claim: true }, $set: answerFields(answer) }, {});
    },
    release: async (userId, key, claim) => {
      await db.remove({ _id: idempotencyId(userId, key), claim }, {});
    },
    sweep: async (now, most) => {
      const records = allDocs().map((doc) => ({
        _id: doc._id as string,
        userId: doc.userId as string,
        key: doc.key as string,
        claim: doc.claim as string | undefined,
        createdAt: doc.createdAt as string,
        expiresAt: doc.expiresAt as string,
        bytes: (doc.bytes as number | undefined) ?? 0,
      }));
      const dropped = recordsToSweep(records, now, most);
      if (dropped.length === 0) return 0;
      return db.remove({ _id: { $in: dropped.map((r) => r._id) } }, { multi: true });
    },
  };
}
