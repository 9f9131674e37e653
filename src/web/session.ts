/**
 * Who is logged in, as far as this page knows. The CSRF token of the cookie session travels
 * with the user record, so every change of user also sets it on the API client.
 */
import { api, ApiError, setCsrfToken, type User } from "./api.js";

let current: User | null = null;

export function currentUser(): User | null {
  return current;
}

export function setCurrentUser(user: User | null): void {
  current = user;
  setCsrfToken(user?.csrf ?? "");
}

/** Asks the server who we are; null when not logged in. Other failures are thrown. */
export async function loadCurrentUser(): Promise<User | null> {
  try {
    setCurrentUser(await api.currentUser());
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) setCurrentUser(null);
    else throw error;
  }
  return current;
}
