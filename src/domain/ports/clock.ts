/**
 * The time the domain stamps on what it writes (cards' `createdAt`/`updatedAt`, a change's
 * `at`, a trashed card's `trashed`): ISO 8601 in UTC. The server's is the system clock;
 * tests may set their own to make times they can compare.
 */
export interface Clock {
  now(): string;
  /**
   * The same instant as `now`, in milliseconds since 1970, where the clock has it without
   * parsing its text (the system clock's `Date.now`). Absent: `Date.parse(now())`.
   */
  nowMs?(): number;
}

export const systemClock: Clock = Object.freeze({ now: () => new Date().toISOString(), nowMs: () => Date.now() });
