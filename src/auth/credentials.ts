/**
 * Checking an email and password, for basic auth on every request and for log-in.
 * A scrypt hash costs tens of milliseconds, so successes are remembered for a few minutes,
 * keyed by an HMAC of the credentials and the stored hash: a password change alters the
 * stored hash and so misses the cache by itself. Failures are never cached. Credentials
 * verified once are remembered longer (30 days, HMACs only) as proof that their holder is
 * no guesser: they skip the log-in throttle (login-throttle.ts), so failures made by
 * others on an account or from an address never lock out its rightful users. The user record
 * is read from the store on every check, so with several processes on one database (SPEC
 * §11) a password changed or an account removed through one is refused by all at once (the
 * embedded store, whose writes all pass through this process, may answer that read from
 * memory: `checkInstant`, `Store.instant`);
 * failed log-ins are told to the others (`ctx.peers`), whose throttles count them too, and
 * so are credentials verified for the first time, which then pass the throttle there too.
 *
 * One exception to reading the user first (issue 27): a card write with credentials verified
 * here within the cache's five minutes may `recall` them instead, and the store read moves
 * to the write itself: the domain confirms the user under the tree's lock, beside the tree's
 * read (src/domain/login-confirmation.ts), before anything is built, committed or answered.
 * That read is later than the one it replaces, so a password changed or an account removed
 * through any process before it is refused exactly as before (docs/decisions.md, "Card
 * writes confirm their log-in under the tree's lock").
 */
import { createHmac } from "node:crypto";
import type { Ports } from "../domain/context.js";
import { ForbiddenError, UnauthenticatedError } from "../shared/errors.js";
import type { StoredUser } from "../shared/records.js";
import { findUserByEmail } from "../domain/users.js";
import { withLateConfirmation } from "../domain/login-confirmation.js";
import { LoginThrottle, throttleKeys } from "./login-throttle.js";
import { PerConnection } from "./per-connection.js";

const CACHE_TTL_MS = 5 * 60 * 1000;
const CACHE_MAX_ENTRIES = 10_000;
/** Credentials verified within this long skip the log-in throttle (not the hash, past the cache). */
const KNOWN_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** About 100 bytes each: 10 MB at most; the longest unused are forgotten first. */
const KNOWN_MAX_ENTRIES = 100_000;

/** A log-in verified lately: the user as read then, and the stored hash the password matched. */
interface Recent {
  user: StoredUser;
  passwordHash: string;
  until: number;
}

export class CredentialChecker {
  private verified = new Map<string, number>();
  /**
   * The same verified log-ins as `verified`, keyed by the credentials alone (their keyed HMAC),
   * for `recall`, which reads nothing before it answers.
   */
  private recent = new Map<string, Recent>();
  private inFlight = new Map<string, Promise<boolean>>();
  /**
   * Keyed HMACs of email and password that this process has verified, to when they stop
   * counting: what tells a user who holds the password from a guesser, so the throttle's
   * address and account limits never lock them out (login-throttle.ts).
   */
  private known = new Map<string, number>();
  readonly throttle: LoginThrottle;

  /**
   * Built before the domain context, which is handed this checker as its `loginAttempts`
   * (src/server.ts): it reads only the ports below.
   */
  constructor(
    private readonly ctx: Ports<"store" | "config" | "peers" | "hasher">,
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
  async check(email: string, password: string, address: string, connection?: object): Promise<StoredUser> {
    const { normalised, credentials } = this.onConnection.get(connection, email, password);
    const keys = throttleKeys(normalised, address);
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
      if (until !== undefined && until > Date.now()) {
        this.keepRecent(credentials, user, until);
        return user;
      }
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
      this.recent.delete(credentials);
      return this.fail(keys);
    }
    if (this.verified.size >= CACHE_MAX_ENTRIES) this.verified.clear();
    const until = Date.now() + CACHE_TTL_MS;
    this.verified.set(cacheKey, until);
    this.keepRecent(credentials, user, until);
    // Told to the other processes once, when first verified (not on each cache miss).
    if (!known) this.ctx.peers.credentialsVerified(credentials, Date.now());
    this.remember(credentials);
    return user;
  }

  /**
   * What `check` would answer, when it can be told without waiting (issue 27): credentials
   * verified here within the cache's lifetime, that pass the throttle (known), of a user the
   * store can give at once (`Store.instant`, holding exactly what a read would give now) whose
   * stored hash is still the one they were verified against. A password changed or an
   * account made again under the email has another hash, so it misses here as it misses
   * `check`'s cache. null whenever any of that cannot be told so (then `check`); never a
   * refusal, which `check` alone gives (and counts).
   */
  checkInstant(email: string, password: string, connection?: object): StoredUser | null {
    const instant = this.ctx.store.instant;
    if (!instant) return null;
    const { normalised, credentials } = this.onConnection.get(connection, email, password);
    const recent = this.recent.get(credentials);
    if (!recent || recent.until <= Date.now() || !this.isKnown(credentials)) return null;
    const user = instant.userByEmail(normalised);
    return user !== undefined && user.passwordHash === recent.passwordHash ? user : null;
  }

  /**
   * For a write that confirms its log-in under the tree's lock (src/domain/login-confirmation.ts):
   * the user of credentials verified here within the cache's lifetime, as an actor of this
   * call alone carrying its confirmation, without reading the store now; null when they are
   * not cached (then `check`). The confirmation reads the user by id (its read starts at
   * once, so that it goes with the tree's) and holds when the user still has this email and
   * the stored hash the password was verified against. Otherwise it forgets them and makes
   * the full `check`, which answers as it would have at the start (401 and a failure counted
   * for a password changed, 429 past the throttle); a check that now finds another account
   * under the email (the account removed and made again meanwhile) is refused too, since the
   * actor already acting is the old one.
   * @throws TooManyRequestsError over the failure limit, for credentials not known here
   *   (as `check`).
   */
  recall(email: string, password: string, address: string, connection?: object): StoredUser | null {
    const { normalised, credentials } = this.onConnection.get(connection, email, password);
    const recent = this.recent.get(credentials);
    if (!recent) return null;
    if (recent.until <= Date.now()) {
      this.recent.delete(credentials);
      return null;
    }
    if (!this.isKnown(credentials)) this.throttle.check(throttleKeys(normalised, address));
    const actor: StoredUser = { ...recent.user };
    return withLateConfirmation(actor, async () => {
      const now = await this.ctx.store.users.byId(actor._id);
      if (now !== null && now.email === normalised && now.passwordHash === recent.passwordHash) return;
      this.recent.delete(credentials);
      const user = await this.check(email, password, address);
      if (user._id !== actor._id) throw new UnauthenticatedError("The account changed while this request ran; send it again.");
    });
  }

  /**
   * The normalised email and the credentials' key, once per connection for the same email
   * and password (`connection`: the request's socket, given by every check a request makes;
   * per-connection.ts).
   */
  private readonly onConnection = new PerConnection((email: string, password: string) => {
    const normalised = email.trim().toLowerCase();
    return { normalised, credentials: this.credentialsKey(normalised, password) };
  });

  private credentialsKey(normalisedEmail: string, password: string): string {
    return createHmac("sha256", this.secret).update(normalisedEmail).update("\0").update(password).digest("base64");
  }

  private keepRecent(credentials: string, user: StoredUser, until: number): void {
    if (!this.recent.has(credentials) && this.recent.size >= CACHE_MAX_ENTRIES) this.recent.clear();
    this.recent.set(credentials, { user, passwordHash: user.passwordHash, until });
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
