/**
 * Checking a password the user typed, other than at log-in (the current password of a
 * password change), is a log-in attempt (SPEC §4; issue 12): refused over the failure limit
 * before any hashing, and a wrong one counted as a failed log-in for that email and
 * address. The server's implementation is its credential checker (src/auth/credentials.ts),
 * whose throttle basic auth and `/api/login` use too.
 */
export interface LoginAttempts {
  /**
   * Runs `check` as a log-in attempt for `email` from `address`; `check` throws
   * ForbiddenError for a wrong password.
   * @throws TooManyRequestsError over the failure limit (and `check` does not run).
   */
  asLoginAttempt<T>(email: string, address: string, check: () => Promise<T>): Promise<T>;
}

/** No throttle: the CLI (the operator at the machine) and tests of the domain alone. */
export const unthrottledAttempts: LoginAttempts = Object.freeze({
  asLoginAttempt: <T>(_email: string, _address: string, check: () => Promise<T>) => check(),
});
