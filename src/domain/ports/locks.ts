/**
 * Serialising check-then-write steps on a key (SPEC §3's card limit: count the owner's
 * cards, then add some). Within one process an in-memory queue per key (domain/keyed-lock.ts);
 * with processes sharing a database, a lock the database holds for all of them
 * (src/store/postgres/locks.ts).
 */
export interface Locks {
  /** Runs `work` once no other holder of `key` (in any process sharing the store) runs. */
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
}
