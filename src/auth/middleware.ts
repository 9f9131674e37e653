/**
 * Settles who is calling, once per request, for both /api and /graphql: basic credentials
 * when an Authorization header is sent, else the cookie session. Cookie-session requests
 * that change anything must carry the session's CSRF token in `X-CSRF-Token`.
 *
 * A browser also attaches basic credentials it has cached for our realm to requests other
 * sites make it send (a form posting an empty body needs no preflight), so a request that
 * changes anything and that the browser marks as coming from another site is refused,
 * whatever its credentials. Older browsers and some clients send no `Sec-Fetch-Site` but
 * do send `Origin`: a write carrying credentials (basic or the session cookie) from an
 * origin other than ours is refused too. Scripts and curl send neither and are unaffected.
 */
import { isIPv4, isIPv6 } from "node:net";
import type { NextFunction, Request, Response } from "express";
import { ForbiddenError, UnauthenticatedError } from "../shared/errors.js";
import type { StoredUser } from "../shared/records.js";
import type { Session, Store } from "../domain/ports/store.js";
import type { CredentialChecker } from "./credentials.js";
import { PerConnection } from "./per-connection.js";
import { csrfMatches, SESSION_COOKIE, type SessionManager } from "./sessions.js";
import { confirmActor } from "../domain/login-confirmation.js";

export interface Auth {
  user: StoredUser | null;
  /** Set for a cookie session; null for basic credentials and anonymous calls. */
  session: Session | null;
  /**
   * A card write's caller taken from the verified logins' cache, not read yet (`user` is
   * then null): only `asConfirmedWriter` hands it on, and nothing is answered before its
   * confirmation holds (credentials.ts `recall`). With an Idempotency-Key it is the key's
   * user too (src/http/idempotency.ts), which confirms it before a replay is sent and lets
   * the key go when it does not hold.
   */
  unconfirmed?: StoredUser;
}

declare module "express-serve-static-core" {
  interface Request {
    auth: Auth;
  }
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
/** These start a session, so there is no token to check yet (full paths: the middleware is mounted under /api). */
const CSRF_EXEMPT = new Set(["/api/login", "/api/signup"]);

/**
 * The card writes whose log-in is confirmed under the tree's lock (`asConfirmedWriter`),
 * below /api. The card routes (src/rest/card-routes.ts) are registered from this list, and
 * `confirmsLate` matches requests against it, so the two cannot drift apart. Each `:name`
 * stands for a record id; only the router's plain spelling matches here (lower case, no
 * trailing slash, no escapes): any other request, or another spelling of these, reads its
 * user first as always. Keyed writes are among them (issue 26: the key's cost was mostly
 * this read, which plain writes no longer made).
 */
export const LATE_CONFIRMED_WRITES = {
  create: { method: "POST", path: "/trees/:treeId/cards" },
  change: { method: "PUT", path: "/trees/:treeId/cards/:cardId" },
  remove: { method: "DELETE", path: "/trees/:treeId/cards/:cardId" },
} as const;

/** A route path's plain spelling as a pattern: each `:name` is a record id, the rest is itself. */
function plainSpelling(path: string): RegExp {
  const parts = path.split("/").map((part) => (part.startsWith(":") ? "[a-z0-9]{24}" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
  return new RegExp(`^${parts.join("/")}$`);
}

const LATE_PATTERNS = Object.values(LATE_CONFIRMED_WRITES).map(({ method, path }) => ({ method, pattern: plainSpelling(path) }));

function confirmsLate(req: Request): boolean {
  if (req.baseUrl !== "/api") return false;
  return LATE_PATTERNS.some(({ method, pattern }) => req.method === method && pattern.test(req.path));
}

export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Splits `Basic base64(email:password)`; null when the header is not of that form. */
export function parseBasicAuth(header: string): { email: string; password: string } | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) return null;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return null;
  return { email: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** `parseBasicAuth`, once per connection for the same header (per-connection.ts). */
const basicOnConnection = new PerConnection(parseBasicAuth);

/**
 * The client's address as the per-address limits count it: behind `TRUST_PROXY`, the
 * right-most untrusted X-Forwarded-For entry (express's `req.ip`). An IPv6 client is its
 * /64, since one host is commonly handed a whole /64 to pick addresses from.
 */
export function clientAddress(req: Request): string {
  return addressKey(req.ip ?? req.socket.remoteAddress ?? "unknown");
}

/** An address as the per-address limits count it: IPv4 (also when mapped into IPv6), or an IPv6 /64. */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped && isIPv4(mapped[1])) return mapped[1];
  if (!isIPv6(ip)) return ip;
  return `${ipv6Groups(ip).slice(0, 4).join(":")}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, in lower-case hex without leading zeros. */
function ipv6Groups(ip: string): string[] {
  const [head, tail = ""] = ip.toLowerCase().split("%")[0].split("::");
  const part = (text: string) => (text === "" ? [] : text.split(":"));
  const toGroups = (parts: string[]) =>
    parts.flatMap((p) => (p.includes(".") ? ipv4AsGroups(p) : [Number.parseInt(p, 16).toString(16)]));
  const left = toGroups(part(head));
  const right = ip.includes("::") ? toGroups(part(tail)) : [];
  return [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
}

function ipv4AsGroups(ip: string): string[] {
  const [a, b, c, d] = ip.split(".").map(Number);
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
}

/** `scheme://host[:port]` as a browser on our pages would send it in `Origin`. */
function ownOrigin(req: Request): string {
  return `${req.protocol}://${req.host}`.toLowerCase();
}

/**
 * @throws ForbiddenError for a write that a browser marks as made by another site, or
 *   that carries credentials and an `Origin` not our own.
 */
function refuseForeignWrites(req: Request, hasCredentials: boolean): void {
  if (SAFE_METHODS.has(req.method)) return;
  const site = req.get("sec-fetch-site");
  if (site === "cross-site" || site === "same-site") {
    throw new ForbiddenError("Requests from other sites may not change anything here.");
  }
  const origin = req.get("origin");
  // A browser that sent Sec-Fetch-Site: same-origin has said so; a proxy that rewrites the
  // Host header would otherwise make our own pages look foreign.
  if (site === undefined && hasCredentials && origin !== undefined && origin.toLowerCase() !== ownOrigin(req)) {
    throw new ForbiddenError("Requests from other sites may not change anything here.");
  }
}

/**
 * The middleware. Basic credentials that `CredentialChecker.checkInstant` can answer at once
 * are settled without a promise (issue 27: on a cached read, the awaits and their async hooks
 * cost as much as the rest of the request); everything else is awaited.
 */
export function authenticate(deps: { store: Store; credentials: CredentialChecker; sessions: SessionManager }) {
  return (req: Request, _res: Response, next: NextFunction): void | Promise<void> => {
    req.auth = { user: null, session: null };
    const header = req.headers.authorization;
    refuseForeignWrites(req, header !== undefined || readCookie(req, SESSION_COOKIE) !== undefined);
    if (header !== undefined) {
      const basic = basicOnConnection.get(req.socket, header);
      if (!basic) throw new UnauthenticatedError("The Authorization header must be Basic credentials.");
      const recalled = confirmsLate(req) ? deps.credentials.recall(basic.email, basic.password, clientAddress(req), req.socket) : null;
      if (recalled) {
        req.auth.unconfirmed = recalled;
        return next();
      }
      const user = deps.credentials.checkInstant(basic.email, basic.password, req.socket);
      if (user) {
        req.auth.user = user;
        return next();
      }
      return deps.credentials.check(basic.email, basic.password, clientAddress(req), req.socket).then((checked) => {
        req.auth.user = checked;
        next();
      });
    }
    return fromSession(deps.sessions, req, next);
  };
}

/**
 * The caller of a request without an Authorization header: its session cookie's user, or
 * nobody. Settled without a promise when the store holds the session and its user
 * (`SessionManager.signedInInstant`), as Basic credentials are (issue 27: the browser's way in).
 */
function fromSession(sessions: SessionManager, req: Request, next: NextFunction): void | Promise<void> {
  const token = readCookie(req, SESSION_COOKIE);
  if (!token) return next();
  const instant = sessions.signedInInstant(token, req.socket);
  if (instant) return signedInAs(instant, req, next);
  return sessions.signedIn(token, req.socket).then((signedIn) => (signedIn ? signedInAs(signedIn, req, next) : next()));
}

function signedInAs({ session, user }: { session: Session; user: StoredUser }, req: Request, next: NextFunction): void {
  if (!SAFE_METHODS.has(req.method) && !CSRF_EXEMPT.has(req.baseUrl + req.path) && !csrfMatches(session, req.get("x-csrf-token"))) {
    throw new ForbiddenError("This request needs the X-CSRF-Token header of your session.");
  }
  req.auth = { user, session };
  next();
}

/**
 * Runs a card write (`write`, given the actor) for a caller whose log-in may still be
 * unconfirmed (a cached one: `Auth.unconfirmed`). The domain confirms it beside the tree's
 * read (withTree), before the write is built; an error, whenever it was raised, is answered
 * by the error handler only once the confirmation settled (src/http/error-response.ts), so a
 * refused log-in is the answer whatever the write did. The confirmation awaited here after a
 * success is settled already; it stands guard should a write ever succeed without reaching
 * its tree. Any other caller is `requireUser`'s.
 */
export async function asConfirmedWriter<T>(req: Request, write: (actor: StoredUser) => Promise<T>): Promise<T> {
  const actor = req.auth?.unconfirmed;
  if (!actor) return write(requireUser(req));
  const result = await write(actor);
  await confirmActor(actor);
  return result;
}

/** The signed-in user. @throws UnauthenticatedError for an anonymous call. */
export function requireUser(req: Request): StoredUser {
  if (!req.auth?.user) throw new UnauthenticatedError();
  return req.auth.user;
}
