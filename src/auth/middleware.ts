/**
 * Settles who is calling, once per request, for both /api and /graphql: basic credentials
 * when an Authorization header is sent, else the cookie session. Cookie-session requests
 * that change anything must carry the session's CSRF token in `X-CSRF-Token`.
 *
 * A browser also attaches basic credentials it has cached for our realm to requests other
 * sites make it send (a form posting an empty body needs no preflight), so a request that
 * changes anything and that the browser marks as coming from another site is refused,
 * whatever its credentials. Scripts and curl send no `Sec-Fetch-Site` and are unaffected.
 */
import type { NextFunction, Request, Response } from "express";
import { ForbiddenError, UnauthenticatedError } from "../domain/errors.js";
import type { StoredUser } from "../domain/records.js";
import type { Session, Store } from "../store/store.js";
import type { CredentialChecker } from "./credentials.js";
import { csrfMatches, SESSION_COOKIE, type SessionManager } from "./sessions.js";

export interface Auth {
  user: StoredUser | null;
  /** Set for a cookie session; null for basic credentials and anonymous calls. */
  session: Session | null;
}

declare module "express-serve-static-core" {
  interface Request {
    auth: Auth;
  }
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
/** These start a session, so there is no token to check yet (full paths: the middleware is mounted under /api). */
const CSRF_EXEMPT = new Set(["/api/login", "/api/signup"]);

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

export function clientAddress(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? "unknown";
}

export function authenticate(deps: { store: Store; credentials: CredentialChecker; sessions: SessionManager }) {
  return async (req: Request, _res: Response, next: NextFunction) => {
    req.auth = { user: null, session: null };
    const site = req.get("sec-fetch-site");
    if (!SAFE_METHODS.has(req.method) && (site === "cross-site" || site === "same-site")) {
      throw new ForbiddenError("Requests from other sites may not change anything here.");
    }
    const header = req.headers.authorization;
    if (header !== undefined) {
      const basic = parseBasicAuth(header);
      if (!basic) throw new UnauthenticatedError("The Authorization header must be Basic credentials.");
      req.auth.user = await deps.credentials.check(basic.email, basic.password, clientAddress(req));
      return next();
    }
    const token = readCookie(req, SESSION_COOKIE);
    const session = token ? await deps.sessions.find(token) : null;
    const user = session ? await deps.store.users.byId(session.userId) : null;
    if (!session || !user) return next();
    if (!SAFE_METHODS.has(req.method) && !CSRF_EXEMPT.has(req.baseUrl + req.path) && !csrfMatches(session, req.get("x-csrf-token"))) {
      throw new ForbiddenError("This request needs the X-CSRF-Token header of your session.");
    }
    req.auth = { user, session };
    next();
  };
}

/** The signed-in user. @throws UnauthenticatedError for an anonymous call. */
export function requireUser(req: Request): StoredUser {
  if (!req.auth?.user) throw new UnauthenticatedError();
  return req.auth.user;
}
