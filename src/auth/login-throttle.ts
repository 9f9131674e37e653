/**
 * The brute-force limit of SPEC §4: after `limit` failed log-ins for one email or from one
 * address within the window, further attempts are refused until the window has passed.
 * Checked before any password hashing, so a flood of guesses costs no CPU. Checks still
 * hashing count against the limit too: otherwise a burst of distinct guesses sent at once
 * would all pass the check before the first failure is recorded, and queue that many
 * hashes in front of everyone else's log-in.
 */
import { TooManyRequestsError } from "../shared/errors.js";

export class LoginThrottle {
  private failures = new Map<string, number[]>();
  private pending = new Map<string, number>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  private recent(key: string, at: number): number[] {
    const list = (this.failures.get(key) ?? []).filter((t) => t > at - this.windowMs);
    if (list.length === 0) this.failures.delete(key);
    else this.failures.set(key, list);
    return list;
  }

  /** @throws TooManyRequestsError while any of the keys is over the limit. */
  check(keys: readonly string[], at = Date.now()): void {
    let retryAfterMs = 0;
    for (const key of keys) {
      const list = this.recent(key, at);
      if (list.length >= this.limit) {
        retryAfterMs = Math.max(retryAfterMs, list[list.length - this.limit] + this.windowMs - at);
      } else if (list.length + (this.pending.get(key) ?? 0) >= this.limit) {
        // Over only while checks are in flight: those end within a second.
        retryAfterMs = Math.max(retryAfterMs, 1000);
      }
    }
    if (retryAfterMs > 0) {
      throw new TooManyRequestsError(
        "Too many failed log-ins. Wait a while before trying again.",
        Math.max(1, Math.ceil(retryAfterMs / 1000)),
      );
    }
  }

  /** Marks a password check in flight for `keys`; call the result when it has ended. */
  begin(keys: readonly string[]): () => void {
    for (const key of keys) this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      for (const key of keys) {
        const left = (this.pending.get(key) ?? 1) - 1;
        if (left > 0) this.pending.set(key, left);
        else this.pending.delete(key);
      }
    };
  }

  recordFailure(keys: readonly string[], at = Date.now()): void {
    for (const key of keys) {
      const list = this.recent(key, at);
      list.push(at);
      this.failures.set(key, list);
    }
    if (this.failures.size > 100_000) this.prune(at);
  }

  private prune(at: number): void {
    for (const key of [...this.failures.keys()]) this.recent(key, at);
  }
}
