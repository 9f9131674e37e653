/**
 * What the engines kept in JavaScript (NeDB, the in-memory store) share for idempotency
 * keys (SPEC §13): the record's id, and which records a sweep drops.
 */

/** What a sweep looks at of a record: `bytes` is its kept body's size. */
export interface SweptRecord {
  userId: string;
  key: string;
  claim?: string;
  createdAt: string;
  expiresAt: string;
  bytes: number;
}

/** One id per user and key: user ids are hex and keys visible ASCII, so a space cannot be in either. */
export function idempotencyId(userId: string, key: string): string {
  return `${userId} ${key}`;
}

/**
 * The records a sweep at `now` drops: those expired, then, per user, the oldest kept answers
 * past the newest `most.keys` records or `most.bytes` bytes of bodies. Running claims are
 * dropped only once expired (a running request is never forgotten under it).
 */
export function recordsToSweep<R extends SweptRecord>(records: Iterable<R>, now: string, most: { keys: number; bytes: number }): R[] {
  const drop: R[] = [];
  const byUser = new Map<string, R[]>();
  for (const record of records) {
    if (record.expiresAt < now) drop.push(record);
    else if (!record.claim) {
      const kept = byUser.get(record.userId);
      if (kept) kept.push(record);
      else byUser.set(record.userId, [record]);
    }
  }
  for (const kept of byUser.values()) {
    if (kept.length <= most.keys && kept.reduce((sum, r) => sum + r.bytes, 0) <= most.bytes) continue;
    kept.sort((a, b) => (a.createdAt === b.createdAt ? (a.key < b.key ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1));
    let bytes = 0;
    kept.forEach((record, index) => {
      bytes += record.bytes;
      if (index >= most.keys || bytes > most.bytes) drop.push(record);
    });
  }
  return drop;
}
