/**
 * Checking an email and password, for basic auth on every request and for log-in.
 * A scrypt hash costs tens of milliseconds, so successes are remembered for a few minutes,
 * keyed by an HMAC of the credentials and the stored hash: a password change alters the
 * stored hash and so misses the cache by itself. Failures are never cached. The user record
 * is read from the store on every check, so with several processes on one database (SPEC
 * §11) a password changed or an account removed through one is refused by all at once;
 * failed log-ins are told to the others (`ctx.peers`), whose throttles count them too.
 */
import { createHmac } from "node:crypto";
import type { DomainContext } from "../domain/context.js";
import { ForbiddenError, UnauthenticatedError } from "../shared/errors.js";
import type { StoredUser } from "../shared/records.js";
import { findUserByEmail } from "../domain/users.js";
import { LoginThrottle } from "./login-throttle.js";

const CACHE_TTL_MS = 5 * 60 * 1000;
const CACHE_MAX_ENTRIES = 10_000;

function throttleKeys(normalisedEmail: string, address: string): string[] {
  return [`email:${normalisedEmail}`, `address:${address}`];
}

export class CredentialChecker {
  private verified = new Map<string, number>();
  private inFlight = new Map<string, Promise<boolean>>();
  readonly throttle: LoginThrottle;

  constructor(
    private readonly ctx: DomainContext,
    private readonly secret: string,
  ) {
    this.throttle = new LoginThrottle(ctx.config.limits.loginFailures, ctx.config.limits.loginWindowMs);
    // Processes sharing the store (SPEC §11) count each other's failures as their own.
    ctx.peers.onLoginFailed((keys, at) => this.throttle.recordFailure(keys, at));
  }

  private recordFailure(keys: string[]): void {
    const at = Date.now();
    this.throttle.recordFailure(keys, at);
    this.ctx.peers.loginFailed(keys, at);
  }

  /**
   * The user these credentials belong to.
   * @throws TooManyRequestsError over the failure limit (before any hashing);
   *   UnauthenticatedError for a wrong email or password.
   */
  async check(email: string, password: string, address: string): Promise<StoredUser> {
    const normalised = email.trim().toLowerCase();
    const keys = throttleKeys(normalised, address);
    this.throttle.check(keys);
    const user = await findUserByEmail(this.ctx, normalised);
    const cacheKey = createHmac("sha256", this.secret)
      .update(normalised)
      .update("\0")
      .update(password)
      .update("\0")
      // An unknown email is checked against the dummy hash, under a key of its own.
      .update(user?.passwordHash ?? "\0unknown")
      .digest("base64");
    if (user) {
      const until = this.verified.get(cacheKey);
      if (until !== undefined && until > Date.now()) return user;
    }
    let verdict = this.inFlight.get(cacheKey);
    if (!verdict) {
      this.throttle.check(keys);
      const end = this.throttle.begin(keys);
      const { hasher } = this.ctx;
      verdict = (user ? hasher.verify(password, user.passwordHash, address) : hasher.verifyAgainstDummy(password, address)).finally(
        () => {
          end();
          this.inFlight.delete(cacheKey);
        },
      );
      this.inFlight.set(cacheKey, verdict);
    }
    if (!(await verdict) || !user) return this.fail(keys);
    if (this.verified.size >= CACHE_MAX_ENTRIES) this.verified.clear();
    this.verified.set(cacheKey, Date.now() + CACHE_TTL_MS);
    return user;
  }

  /**
   * Runs a check of a password made elsewhere (the current password of a password change)
   * as a log-in attempt: refused with 429 over the failure limit before any hashing,
   * counted against the limit while in flight, and a wrong password (`attempt` throws
   * ForbiddenError) is a failed log-in for that email and address.
   */
  async asLoginAttempt<T>(email: string, address: string, attempt: () => Promise<T>): Promise<T> {
    const keys = throttleKeys(email.trim().toLowerCase(), address);
    this.throttle.check(keys);
    const end = this.throttle.begin(keys);
    try {
      return await attempt();
    } catch (err) {
      if (err instanceof ForbiddenError) this.recordFailure(keys);
      throw err;
    } finally {
      end();
    }
  }

  private fail(keys: string[]): never {
    this.recordFailure(keys);
    throw new UnauthenticatedError("The email or password is wrong.");
  }
}
