/**
 * Cookie sessions for the browser client. The cookie holds a random token; the store
 * keeps only an HMAC of it, with the user's id and the session's CSRF token.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Session, Store } from "../domain/ports/store.js";
import type { StoredUser } from "../shared/records.js";
import { PerConnection } from "./per-connection.js";

export const SESSION_COOKIE = "cardtree_session";
export { SIGNED_IN_COOKIE } from "../shared/cookies.js";

/** A cookie token as `start` makes it: 32 random bytes in base64url. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

function expired(session: Session): boolean {
  return session.expiresAt <= new Date().toISOString();
}

export class SessionManager {
  constructor(
    private readonly store: Store,
    private readonly secret: string,
    /** Told of every session that ends (logout, a new login, expiry): the live streams opened with it end. */
    private readonly ended: (sessionId: string) => void = () => {},
    /** How long a session lasts from its start (`SESSION_TTL_MS`). */
    readonly ttlMs = 30 * 24 * 60 * 60 * 1000,
  ) {}

  private idOf(token: string): string {
    return createHmac("sha256", this.secret).update(token).digest("hex");
  }

  /** `idOf`, once per connection for the same token (per-connection.ts). */
  private readonly idOnConnection = new PerConnection((token: string) => this.idOf(token));

  /** Starts a session; returns the cookie token and the session. */
  async start(userId: string): Promise<{ token: string; session: Session }> {
    const token = randomBytes(32).toString("base64url");
    const at = Date.now();
    const session: Session = {
      _id: this.idOf(token),
      userId,
      csrf: randomBytes(24).toString("base64url"),
      createdAt: new Date(at).toISOString(),
      expiresAt: new Date(at + this.ttlMs).toISOString(),
    };
    await this.store.sessions.insert(session);
    return { token, session };
  }

  /**
   * The live session for a cookie token and its user, or null (no such session, expired, or
   * its account gone): one read of the store for both (`withUser`).
   */
  async signedIn(token: string, connection?: object): Promise<{ session: Session; user: StoredUser } | null> {
    if (!TOKEN.test(token)) return null;
    const found = await this.store.sessions.withUser(this.idOnConnection.get(connection, token));
    if (!found) return null;
    const { session, user } = found;
    if (expired(session)) {
      await this.store.sessions.remove(session._id);
      this.ended(session._id);
      return null;
    }
    return user ? { session, user } : null;
  }

  /**
   * `signedIn(token)` answered without waiting, when the store can say what its read would
   * now (`Store.instant`: the embedded store, every write of which passes through this process,
   * and drops what it holds of a collection when a write to it begins, a log-out among them).
   * undefined when it cannot say, or when the session has run out (`signedIn` removes it).
   */
  signedInInstant(token: string, connection?: object): { session: Session; user: StoredUser } | undefined {
    if (!this.store.instant || !TOKEN.test(token)) return undefined;
    const found = this.store.instant.sessionWithUser(this.idOnConnection.get(connection, token));
    if (!found || expired(found.session)) return undefined;
    return found;
  }

  async end(session: Session): Promise<void> {
    await this.store.sessions.remove(session._id);
    this.ended(session._id);
  }
}

export function csrfMatches(session: Session, header: string | undefined): boolean {
  if (!header) return false;
  const a = Buffer.from(session.csrf);
  const b = Buffer.from(header);
  return a.length === b.length && timingSafeEqual(a, b);
}
