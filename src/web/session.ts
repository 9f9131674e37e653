/**
 * Who is logged in, as far as this page knows. The CSRF token of the cookie session travels
 * with the user record, so every change of user also sets it on the API client.
 */
import { ApiError, type ApiClient, type UserView } from "./api.js";

export class Session {
  private current: UserView | null = null;

  constructor(private readonly api: ApiClient) {}

  get user(): UserView | null {
    return this.current;
  }

  set(user: UserView | null): void {
    this.current = user;
    this.api.setCsrfToken(user?.csrf ?? "");
  }

  /** Asks the server who we are; null when not logged in. Other failures are thrown. */
  async load(): Promise<UserView | null> {
    try {
      this.set(await this.api.currentUser());
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) this.set(null);
      else throw error;
    }
    return this.current;
  }
}
