/**
 * What the processes sharing one store tell each other beside changes (SPEC §11): failed
 * log-ins, so that the brute-force limit (SPEC §4) counts the attempts made through every
 * process. Within one process there is nobody to tell (`NO_PEERS`); on PostgreSQL the
 * change feed's connection carries them (src/store/postgres/change-feed.ts).
 */
export interface Peers {
  /** Tells every other process of a failed log-in counted against `keys` at `at` (epoch ms). */
  loginFailed(keys: readonly string[], at: number): void;
  /** Calls `listener` for each failed log-in another process counted; returns the unsubscribe. */
  onLoginFailed(listener: (keys: readonly string[], at: number) => void): () => void;
}
