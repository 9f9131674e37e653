/**
 * The brute-force limit of SPEC §4, shaped so that it cannot be turned against others
 * (issue 25). Failed log-ins are counted under three keys, each with its own limit within
 * the window:
 *
 * - `pair:<email>|<address>`: one account from one client address (`LOGIN_FAILURE_LIMIT`,
 *   10). Guessing one account's password from one place stops here, and only that pair is
 *   refused: the other users behind the same address (a NAT, a proxy) are not.
 * - `address:<address>`: every account from one address (`LOGIN_ADDRESS_FAILURE_LIMIT`,
 *   50): bounds guessing across many accounts from one place.
 * - `account:<email>`: one account from every address (`LOGIN_ACCOUNT_FAILURE_LIMIT`, 50):
 *   bounds guessing one account from many places.
 *
 * Credentials this process has already verified skip the throttle altogether (the caller,
 * credentials.ts, decides that), so the address and account limits lock out only clients
 * that never proved they hold the password: an attacker cannot lock a user out by failing
 * on their account, nor the users of an address by failing from it.
 *
 * Checked before any password hashing, so a flood of guesses costs no CPU. Checks still
 * hashing count against the limit too: otherwise a burst of distinct guesses sent at once
 * would all pass the check before the first failure is recorded, and queue that many
 * hashes in front of everyone else's log-in.
 */
import { TooManyRequestsError } from "../shared/errors.js";

export interface LoginLimits {
  /** Failures of one account from one address. */
  pair: number;
  /** Failures from one address, whatever the account. */
  address: number;
  /** Failures of one account, whatever the address. */
  account: number;
}

/** The keys one attempt is counted under. */
export function throttleKeys(normalisedEmail: string, address: string): string[] {
  return [`pair:${normalisedEmail}|${address}`, `address:${address}`, `account:${normalisedEmail}`];
}

export class LoginThrottle {
  private failures = new Map<string, number[]>();
  private pending = new Map<string, number>();

  constructor(
    private readonly limits: LoginLimits,
    private readonly windowMs: number,
  ) {}

  /** The limit of `key`'s kind; keys of another kind (an older process's) count nothing. */
  private limitOf(key: string): number {
    if (key.startsWith("pair:")) return this.limits.pair;
    if (key.startsWith("address:")) return this.limits.address;
    if (key.startsWith("account:")) return this.limits.account;
    return Infinity;
  }

  private recent(key: string, at: number): number[] {
    const list = (this.failures.get(key) ?? []).filter((t) => t > at - this.windowMs);
    if (list.length === 0) this.failures.delete(key);
    else this.failures.set(key, list);
    return list;
  }

  /** @throws TooManyRequestsError while any of the keys is over its limit. */
  check(keys: readonly string[], at = Date.now()): void {
    let retryAfterMs = 0;
    for (const key of keys) {
      const limit = this.limitOf(key);
      const list = this.recent(key, at);
      if (list.length >= limit) {
        retryAfterMs = Math.max(retryAfterMs, list[list.length - limit] + this.windowMs - at);
      } else if (list.length + (this.pending.get(key) ?? 0) >= limit) {
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
      if (this.limitOf(key) === Infinity) continue;
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
