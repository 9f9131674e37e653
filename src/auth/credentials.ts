/**
 * Checking an email and password, for basic auth on every request and for log-in.
 * A scrypt hash costs tens of milliseconds, so successes are remembered for a few minutes,
 * keyed by an HMAC of the credentials and the stored hash: a password change alters the
 * stored hash and so misses the cache by itself. Failures are never cached. Credentials
 * verified once are remembered longer (30 days, HMACs only) as proof that their holder is
 * no guesser: they skip the log-in throttle (login-throttle.ts), so failures made by
 * others on an account or from an address never lock out its rightful users. The user record
 * is read from the store on every check, so with several processes on one database (SPEC
 * §11) a password changed or an account removed through one is refused by all at once;
 * failed log-ins are told to the others (`ctx.peers`), whose throttles count them too, and
 * so are credentials verified for the first time, which then pass the throttle there too.
 */
import { createHmac } from "node:crypto";
import type { DomainContext } from "../domain/context.js";
import { ForbiddenError, UnauthenticatedError } from "../shared/errors.js";
import type { StoredUser } from "../shared/records.js";
import { findUserByEmail } from "../domain/users.js";
import { LoginThrottle, throttleKeys } from "./login-throttle.js";

const CACHE_TTL_MS = 5 * 60 * 1000;
const CACHE_MAX_ENTRIES = 10_000;
/** Credentials verified within this long skip the log-in throttle (not the hash, past the cache). */
const KNOWN_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** About 100 bytes each: 10 MB at most; the longest unused are forgotten first. */
const KNOWN_MAX_ENTRIES = 100_000;

export class CredentialChecker {
  private verified = new Map<string, number>();
  private inFlight = new Map<string, Promise<boolean>>();
  /**
   * Keyed HMACs of email and password that this process has verified, to when they stop
   * counting: what tells a user who holds the password from a guesser, so the throttle's
   * address and account limits never lock them out (login-throttle.ts).
   */
  private known = new Map<string, number>();
  readonly throttle: LoginThrottle;

  constructor(
    private readonly ctx: DomainContext,
    private readonly secret: string,
  ) {
    const { loginFailures, loginAddressFailures, loginAccountFailures, loginWindowMs } = ctx.config.limits;
    this.throttle = new LoginThrottle({ pair: loginFailures, address: loginAddressFailures, account: loginAccountFailures }, loginWindowMs);
    // Processes sharing the store (SPEC §11) count each other's failures as their own, and
    // trust the credentials the others verified.
    ctx.peers.onLoginFailed((keys, at) => this.throttle.recordFailure(keys, at));
    ctx.peers.onCredentialsVerified((credentials, at) => this.remember(credentials, at));
  }

  private recordFailure(keys: string[]): void {
    const at = Date.now();
    this.throttle.recordFailure(keys, at);
    this.ctx.peers.loginFailed(keys, at);
  }

  private isKnown(credentials: string): boolean {
    const until = this.known.get(credentials);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.known.delete(credentials);
    return false;
  }

  private remember(credentials: string, at = Date.now()): void {
    this.known.delete(credentials);
    this.known.set(credentials, at + KNOWN_TTL_MS);
    if (this.known.size > KNOWN_MAX_ENTRIES) this.known.delete(this.known.keys().next().value!);
  }

  /**
   * The user these credentials belong to. Credentials verified before pass whatever the
   * throttle says; others are refused over its limits before anything is read or hashed.
   * @throws TooManyRequestsError over the failure limit (before any hashing);
   *   UnauthenticatedError for a wrong email or password.
   */
  async check(email: string, password: string, address: string): Promise<StoredUser> {
    const normalised = email.trim().toLowerCase();
    const keys = throttleKeys(normalised, address);
    const credentials = createHmac("sha256", this.secret).update(normalised).update("\0").update(password).digest("base64");
    const known = this.isKnown(credentials);
    if (!known) this.throttle.check(keys);
    const user = await findUserByEmail(this.ctx, normalised);
    const cacheKey = createHmac("sha256", this.secret)
      .update(credentials)
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
      if (!known) this.throttle.check(keys);
      const end = this.throttle.begin(keys);
      const { hasher } = this.ctx;
      verdict = (user ? hasher.verify(password, user.passwordHash, address, known) : hasher.verifyAgainstDummy(password, address)).finally(
        () => {
          end();
          this.inFlight.delete(cacheKey);
        },
      );
      this.inFlight.set(cacheKey, verdict);
    }
    if (!(await verdict) || !user) {
      // Known once, wrong now (the password changed): a guess like any other from here on.
      this.known.delete(credentials);
      return this.fail(keys);
    }
    if (this.verified.size >= CACHE_MAX_ENTRIES) this.verified.clear();
    this.verified.set(cacheKey, Date.now() + CACHE_TTL_MS);
    // Told to the other processes once, when first verified (not on each cache miss).
    if (!known) this.ctx.peers.credentialsVerified(credentials, Date.now());
    this.remember(credentials);
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
