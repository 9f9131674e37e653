/**
 * Who is calling over a GraphQL WebSocket connection (graphql-ws, src/graphql/websocket.ts),
 * settled once, when the client sends `connection_init`, by the same rules as the HTTP
 * middleware (middleware.ts): basic credentials in the payload's `Authorization`, else the
 * session cookie the upgrade request carried, which then needs the session's CSRF token in
 * the payload's `X-CSRF-Token`. A page on another site can open a WebSocket to us and the
 * browser sends our cookie with it, as it would with a form; it cannot read the token.
 *
 * The payload's keys are matched without regard to case, at its top level or under
 * `headers` (clients put them either way): `{"Authorization": "Basic ..."}`,
 * `{"headers": {"x-csrf-token": "..."}}`.
 */
import type { Request } from "express";
import { ForbiddenError, UnauthenticatedError } from "../shared/errors.js";
import type { Store } from "../domain/ports/store.js";
import type { CredentialChecker } from "./credentials.js";
import { clientAddress, parseBasicAuth, readCookie, type Auth } from "./middleware.js";
import { csrfMatches, SESSION_COOKIE, type SessionManager } from "./sessions.js";

/** The string under `name` (any case), at the top of `payload` or in its `headers`. */
function payloadValue(payload: Record<string, unknown>, name: string): string | undefined {
  const headers = payload.headers;
  for (const source of [payload, typeof headers === "object" && headers !== null ? (headers as Record<string, unknown>) : {}]) {
    for (const [key, value] of Object.entries(source)) {
      if (key.toLowerCase() === name && typeof value === "string") return value;
    }
  }
  return undefined;
}

/**
 * The caller of a connection whose upgrade request is `req` and whose `connection_init`
 * payload is `payload`: no credentials at all is an anonymous caller (public trees).
 * @throws UnauthenticatedError for malformed or wrong basic credentials;
 *   ForbiddenError for a live session cookie without its CSRF token;
 *   TooManyRequestsError past the log-in throttle.
 */
export async function authenticateConnection(
  deps: { store: Store; credentials: CredentialChecker; sessions: SessionManager },
  req: Request,
  payload: Record<string, unknown>,
): Promise<Auth> {
  const authorization = payloadValue(payload, "authorization");
  if (authorization !== undefined) {
    const basic = parseBasicAuth(authorization);
    if (!basic) throw new UnauthenticatedError("Authorization must be Basic credentials.");
    return { user: await deps.credentials.check(basic.email, basic.password, clientAddress(req)), session: null };
  }
  const token = readCookie(req, SESSION_COOKIE);
  const signedIn = token ? await deps.sessions.signedIn(token) : null;
  if (!signedIn) return { user: null, session: null };
  const { session, user } = signedIn;
  if (!csrfMatches(session, payloadValue(payload, "x-csrf-token"))) {
    throw new ForbiddenError("A connection with the session cookie needs the session's X-CSRF-Token in connection_init's payload.");
  }
  return { user, session };
}
