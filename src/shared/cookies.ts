/**
 * The cookie the server sets at log-in and sign-up, and clears at log-out, named here once for
 * the server (src/rest/account-routes.ts) and the page (src/web/session.ts).
 *
 * Set beside the session cookie and readable by the page (no secret in it): it tells the
 * client that a session may exist, so a first visit shows the log-in page without asking
 * `GET /api/index` for a 401 the browser would log as an error (issue 27).
 */
export const SIGNED_IN_COOKIE = "cardtree_signed_in";
