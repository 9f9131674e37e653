/**
 * Who is logged in, as far as this page knows. The CSRF token of the cookie session travels
 * with the user record, so every change of user also sets it on the API client.
 *
 * The last user seen is kept in localStorage, so that the app opens offline (SPEC §13) as
 * that user, with the trees and outbox this browser keeps for them; it is forgotten at log-out.
 * Back online, the server's answer replaces it (another user, or none).
 */
import { ApiError, NetworkError, type ApiClient, type UserView } from "./api.js";
import { SIGNED_IN_COOKIE } from "../shared/cookies.js";

const KEPT_USER = "cardtree:user";

export class Session {
  private current: UserView | null = null;
  /** True while the user comes from this browser's memory, not yet from the server. */
  offline = false;

  constructor(private readonly api: ApiClient) {}

  get user(): UserView | null {
    return this.current;
  }

  set(user: UserView | null): void {
    this.current = user;
    this.offline = false;
    this.api.setCsrfToken(user?.csrf ?? "");
    try {
      if (user) localStorage.setItem(KEPT_USER, JSON.stringify(user));
      else localStorage.removeItem(KEPT_USER);
    } catch {
      // Storage disabled: the app then needs the server to open.
    }
  }

  /**
   * Asks the server who we are; null when not logged in. Without a network, the user this
   * browser last saw (marked `offline`); other failures are thrown.
   */
  async load(): Promise<UserView | null> {
    // No session can exist: the log-in page at once, without a 401 in the console.
    if (!mayBeSignedIn()) {
      this.set(null);
      return null;
    }
    try {
      this.set(await this.api.currentUser());
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        this.set(null);
        forgetSignedIn();
      } else if (error instanceof NetworkError || (error instanceof ApiError && error.transient)) {
        const kept = keptUser();
        if (!kept) throw error;
        this.current = kept;
        this.offline = true;
        this.api.setCsrfToken(kept.csrf ?? "");
      } else throw error;
    }
    return this.current;
  }
}


/**
 * Whether asking the server who we are can answer anything but 401: the server's mark of a
 * session (set at log-in beside the session cookie), or a user this browser kept. Outside a
 * page (Node, the simulation) there are no cookies to read: always ask.
 */
export function mayBeSignedIn(): boolean {
  if (typeof document === "undefined") return true;
  return document.cookie.split(/;\s*/).some((pair) => pair.startsWith(`${SIGNED_IN_COOKIE}=`)) || keptUser() !== null;
}

function forgetSignedIn(): void {
  if (typeof document !== "undefined") document.cookie = `${SIGNED_IN_COOKIE}=; Max-Age=0; path=/; SameSite=Lax`;
}

/** The id of the user this browser last saw (kept for opening offline), if any. */
export function keptUserId(): string | null {
  return keptUser()?._id ?? null;
}

function keptUser(): UserView | null {
  try {
    const user = JSON.parse(localStorage.getItem(KEPT_USER) ?? "null") as UserView | null;
    return user && typeof user._id === "string" && typeof user.email === "string" ? user : null;
  } catch {
    return null;
  }
}
