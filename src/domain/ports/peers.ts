/**
 * What the processes sharing one store tell each other beside changes (SPEC §11): failed
 * log-ins, so that the brute-force limit (SPEC §4) counts the attempts made through every
 * process; sign-outs (logout, password changes), so that live streams opened there on those
 * credentials end; sign-ups, so that the sign-up budget does; and trees whose writes raced, so
 * that every process writing them takes turns (domain/tree-races.ts); who is present on which
 * tree (domain/presence.ts), which is never stored anywhere. Advisory: a notice sent while
 * the link is down is lost, and attempts made in the same instant through two processes
 * may each pass before hearing of the other. Within one process there is nobody to tell (`NO_PEERS`); on PostgreSQL the
 * change feed's connection carries them (src/store/postgres/change-feed.ts).
 */
/**
 * One process's presence on a tree (domain/presence.ts), as it tells the others: the people
 * it holds there now (each refreshed; a listener keeps one only a few seconds unless told
 * again), and the keys of those gone from it since it last told (a tab closed), with when.
 */
export interface PresenceNotice {
  treeId: string;
  people: { key: string; tab: string; userId: string; name: string; cardId: string | null; editing: boolean; at: number }[];
  gone: { key: string; at: number }[];
}

/** Whose access ended: one cookie session, or every stream of a user but one session's. */
export type SignOut = { sessionId: string } | { userId: string; keepSessionId?: string };

export interface Peers {
  /** Tells every other process of a failed log-in counted against `keys` at `at` (epoch ms). */
  loginFailed(keys: readonly string[], at: number): void;
  /** Calls `listener` for each failed log-in another process counted; returns the unsubscribe. */
  onLoginFailed(listener: (keys: readonly string[], at: number) => void): () => void;
  /**
   * Tells every other process that the credentials keyed `credentials` (an HMAC under the
   * instance secret the processes share, never the password) were verified here at `at`:
   * they pass the log-in throttle there too (auth/credentials.ts).
   */
  credentialsVerified(credentials: string, at: number): void;
  /** Calls `listener` for credentials another process verified; returns the unsubscribe. */
  onCredentialsVerified(listener: (credentials: string, at: number) => void): () => void;
  /** Tells every other process of an account made through web sign-up from `address`. */
  signedUp(address: string, at: number): void;
  /** Calls `listener` for each sign-up through another process; returns the unsubscribe. */
  onSignedUp(listener: (address: string, at: number) => void): () => void;
  /**
   * Calls `listener` for each sign-out another process (a server, the CLI) made; returns the
   * unsubscribe. Nothing tells them from here: the shared store sends the notice in the
   * transaction that removes the sessions (`SessionRepository.remove`, `removeForUser`), so
   * it goes out exactly when they are gone, whoever removed them.
   */
  onSignedOut(listener: (which: SignOut) => void): () => void;
  /** Tells every other process who is present on a tree through this one (never through the store). */
  presence(notice: PresenceNotice): void;
  /** Calls `listener` for each presence notice of another process; returns the unsubscribe. */
  onPresence(listener: (notice: PresenceNotice) => void): () => void;
  /** Tells every other process that writes to `treeId` lost a race for its revision here. */
  treeContended(treeId: string): void;
  /** Calls `listener` for each tree another process found contended; returns the unsubscribe. */
  onTreeContended(listener: (treeId: string) => void): () => void;
}
