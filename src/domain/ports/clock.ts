/**
 * The time the domain stamps on what it writes (cards' `createdAt`/`updatedAt`, a change's
 * `at`, a trashed card's `trashed`): ISO 8601 in UTC. The server's is the system clock;
 * tests may set their own to make times they can compare.
 */
export interface Clock {
  now(): string;
}

export const systemClock: Clock = Object.freeze({ now: () => new Date().toISOString() });
