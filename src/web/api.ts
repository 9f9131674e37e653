/**
 * The REST client (SPEC §4) for the browser: JSON in and out, the cookie session, and the
 * CSRF header on every request that changes something. Failures become ApiError (the server
 * answered with an error body) or NetworkError (no answer at all), so callers can tell
 * "retry later" from "the server said no".
 */
import { CARDS_REVISION_HEADER, cardsRevision, TREE_REVISION_HEADER } from "../shared/changes.js";
import type { ExportFormat } from "../shared/export-options.js";
import type { Preferences } from "../shared/preferences.js";
import type { z } from "zod";
import type { cardVersionRecord, changeView, historyEntry, revertResult, trashEntry } from "../shared/record-schemas.js";
import type { Card, Collaborator, ScriptView, SeedNode, Tree, UserView } from "../shared/records.js";

export type { Card, Collaborator, ExportFormat, ScriptView, SeedNode, Tree, UserView };
export type ChangeView = z.infer<typeof changeView>;
export type RevertResult = z.infer<typeof revertResult>;
export type HistoryEntry = z.infer<typeof historyEntry>;
export type CardVersion = z.infer<typeof cardVersionRecord>;
export type TrashEntry = z.infer<typeof trashEntry>;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterSeconds?: number,
    /** The error body's `details` (SPEC §4), as sent: a 409 conflict's `current` card, or the revert's `changed` cards. */
    readonly details?: unknown,
  ) {
    super(message);
    this.name = "ApiError";
  }

  /**
   * Worth retrying unchanged later: the server was overloaded or failed, not the request; or
   * the same idempotency key is still being answered (409 with `Retry-After`, SPEC §13).
   */
  get transient(): boolean {
    return this.status >= 500 || this.status === 429 || this.status === 408 || this.stillRunning;
  }

  /** 409 for a request whose idempotency key is still being answered (no `current` card, a `Retry-After`). */
  get stillRunning(): boolean {
    const current = (this.details as { current?: unknown } | undefined)?.current;
    return this.status === 409 && this.retryAfterSeconds !== undefined && current === undefined;
  }
}

export class NetworkError extends Error {
  constructor() {
    super("Cardtree can't reach the server. Check your connection; your work is kept and retried.");
    this.name = "NetworkError";
  }
}

type Method = "GET" | "POST" | "PUT" | "DELETE";

/** A write the server numbered: the change it made to a tree (`X-Tree-Revision`, SPEC §10). */
export interface TreeWrite {
  method: Method;
  path: string;
  revision: number;
  /** The answer's body: the card or cards written, for telling which write was which. */
  body: unknown;
}

/** Told of every write that made a change (the undo stack keeps the tab's own revisions). */
export const treeWrites = new Set<(write: TreeWrite) => void>();

/** Where requests go and what they carry besides: the page's own origin, or (in Node, the simulation) a server and credentials. */
export interface ApiOptions {
  /** Prefix of every path, e.g. `http://127.0.0.1:3000`; empty in the browser. */
  base?: string;
  /** Headers sent with every request (HTTP basic auth outside the browser). */
  headers?: Record<string, string>;
  /** The fetch to use (the simulation's, which cuts the network at will); the global one by default. */
  fetch?: typeof fetch;
}

/** Sends one request; `csrf` goes with every request that changes something. */
async function request<T>(
  csrf: string,
  method: Method,
  path: string,
  body?: unknown,
  extra: Record<string, string> = {},
  options: ApiOptions = {},
  /** Shown the answer's headers when it is 2xx, before its body is read. */
  seen?: (headers: Headers) => void,
): Promise<T> {
  // X-Requested-With makes the server leave out `WWW-Authenticate` on a 401, which would
  // otherwise pop up the browser's own password dialog over the app.
  const headers: Record<string, string> = { Accept: "application/json", "X-Requested-With": "XMLHttpRequest", ...options.headers, ...extra };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET") headers["X-CSRF-Token"] = csrf;
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(`${options.base ?? ""}${path}`, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new NetworkError();
  }
  if (!response.ok) throw await errorFrom(response);
  seen?.(response.headers);
  const revision = Number(response.headers.get(TREE_REVISION_HEADER));
  const answer = response.status === 204 ? undefined : ((await response.json()) as T);
  if (revision > 0) for (const listener of treeWrites) listener({ method, path, revision, body: answer });
  return answer as T;
}

/** The error an answer that is not 2xx stands for (also model/card-loader.ts's, for the worker's answers). */
export async function errorFrom(response: Response): Promise<ApiError> {
  const retryAfter = Number(response.headers.get("Retry-After")) || undefined;
  try {
    const body = (await response.json()) as { error?: string; message?: string; details?: unknown };
    if (body && typeof body.message === "string") {
      return new ApiError(response.status, body.error ?? "internal", body.message, retryAfter, body.details);
    }
  } catch {
    // Not JSON: a proxy or a crashed server answered. Fall through to a generic sentence.
  }
  const message =
    response.status >= 500
      ? `The server had a problem (HTTP ${response.status}). Try again in a moment.`
      : `The server refused the request (HTTP ${response.status}).`;
  return new ApiError(response.status, response.status >= 500 ? "internal" : "invalid_request", message, retryAfter);
}

const enc = encodeURIComponent;

export type ApiClient = ReturnType<typeof createApi>;

/**
 * The client of one page: one function per REST call, named after what it does. It holds the
 * cookie session's CSRF token, which the session (session.ts) sets whenever the user changes.
 */
export function createApi(options: ApiOptions = {}) {
  let csrf = "";
  const call = <T>(method: Method, path: string, body?: unknown, headers?: Record<string, string>) =>
    request<T>(csrf, method, path, body, headers, options);
  /** The `Idempotency-Key` header (SPEC §13) of a write the outbox may send more than once. */
  const keyed = (key: string | undefined, headers: Record<string, string> = {}) => (key ? { ...headers, "Idempotency-Key": key } : headers);
  return {
    setCsrfToken(token: string): void {
      csrf = token;
    },

    currentUser: () => call<UserView>("GET", "/api/index"),
    logIn: (email: string, password: string) => call<UserView>("POST", "/api/login", { email, password }),
    signUp: (email: string, password: string) => call<UserView>("POST", "/api/signup", { email, password }),
    logOut: () => call<void>("POST", "/api/logout"),
    setFavorites: (favoriteTrees: string[]) => call<UserView>("PUT", "/api/index", { favoriteTrees }),
    changePassword: (currentPassword: string, newPassword: string) => call<UserView>("PUT", "/api/index", { currentPassword, newPassword }),
    preferences: () => call<Preferences>("GET", "/api/preferences"),
    setPreferences: (change: Partial<Preferences>) => call<Preferences>("PUT", "/api/preferences", change),

    trees: () => call<Tree[]>("GET", "/api/trees"),
    createTree: (name: string, seed?: string) => call<Tree>("POST", "/api/trees", seed === undefined || seed === "" ? { name } : { name, seed }),
    updateTree: (treeId: string, changes: { name?: string; publicUrl?: string | null; latex?: boolean }) =>
      call<Tree>("PUT", `/api/trees/${enc(treeId)}`, changes),
    deleteTree: (treeId: string) => call<void>("DELETE", `/api/trees/${enc(treeId)}`),
    cloneTree: (treeId: string) => call<Tree>("POST", `/api/trees/${enc(treeId)}/clone`),
    clonePublicTree: (publicUrl: string) => call<Tree>("POST", `/api/trees/${enc(publicUrl)}/clonePublic`),
    publicTree: (publicUrl: string) => call<{ tree: Tree; cards: Card[] }>("GET", `/api/public/${enc(publicUrl)}`),

    cards: (treeId: string) => call<Card[]>("GET", `/api/trees/${enc(treeId)}/cards`),
    /** The cards with the tree revision the server read them at (`X-Cards-Revision`; null when it did not say). */
    cardsAt: async (treeId: string): Promise<{ cards: Card[]; revision: number | null }> => {
      let said: string | null = null;
      const cards = await request<Card[]>(csrf, "GET", `/api/trees/${enc(treeId)}/cards`, undefined, {}, options, (headers) => {
        said = headers.get(CARDS_REVISION_HEADER);
      });
      return { cards, revision: cardsRevision(said) };
    },
    /** `_id` is the client's own id for the card (SPEC §13); `key` its idempotency key. */
    createCard: (treeId: string, card: { _id?: string; parentId: string | null; position: number; content: string }, key?: string) =>
      call<Card>("POST", `/api/trees/${enc(treeId)}/cards`, { ...card, treeId }, keyed(key)),
    /** With `__v`, a conditional write (SPEC §10): a card changed since answers 409 `conflict`. */
    updateCard: (treeId: string, cardId: string, fields: Pick<Card, "content" | "position" | "parentId"> & { __v?: number }, key?: string) =>
      call<Card>("PUT", `/api/trees/${enc(treeId)}/cards/${enc(cardId)}`, fields, keyed(key)),
    /** With `version`, only that version of the card is deleted; a newer one answers 409. */
    deleteCard: (treeId: string, cardId: string, version?: number, key?: string) =>
      call<{ deleted: string[] }>(
        "DELETE",
        `/api/trees/${enc(treeId)}/cards/${enc(cardId)}`,
        undefined,
        keyed(key, version === undefined ? {} : { "If-Match": `"${version}"` }),
      ),
    importSeed: (treeId: string, parentId: string | null, seed: string, key?: string) =>
      call<Card[]>("POST", `/api/trees/${enc(treeId)}/cards/seed`, { parentId, seed }, keyed(key)),

    /**
     * Reverts changes (one undo step's) as one new change; 409 `conflict` when their cards
     * changed since, unless `force`.
     */
    revertChanges: (treeId: string, revisions: number[], force = false) =>
      call<RevertResult>("POST", `/api/trees/${enc(treeId)}/changes/${revisions[revisions.length - 1]}/revert`, {
        ...(force ? { force } : {}),
        ...(revisions.length > 1 ? { together: revisions.slice(0, -1) } : {}),
      }),
    history: (treeId: string, before?: number, limit = 50) =>
      call<HistoryEntry[]>("GET", `/api/trees/${enc(treeId)}/history?limit=${limit}${before ? `&before=${before}` : ""}`),
    cardVersions: (treeId: string, cardId: string) => call<CardVersion[]>("GET", `/api/trees/${enc(treeId)}/cards/${enc(cardId)}/versions`),
    trash: (treeId: string) => call<TrashEntry[]>("GET", `/api/trees/${enc(treeId)}/trash`),
    restoreCard: (treeId: string, cardId: string) => call<Card[]>("POST", `/api/trees/${enc(treeId)}/cards/${enc(cardId)}/restore`),
    restoreTree: (treeId: string, revision: number) => call<Tree>("POST", `/api/trees/${enc(treeId)}/restore`, { revision }),

    /** Where this tab is on the tree, and that it is still there (presence: memory only, never a change). */
    presence: (treeId: string, where: { tab: string; cardId: string | null; editing: boolean }) =>
      call<void>("PUT", `/api/trees/${enc(treeId)}/presence`, where),

    collaborators: (treeId: string) => call<Collaborator[]>("GET", `/api/trees/${enc(treeId)}/collaborators`),
    addCollaborator: (treeId: string, email: string) => call<Collaborator>("POST", `/api/trees/${enc(treeId)}/collaborators`, { email }),
    removeCollaborator: (treeId: string, userId: string) => call<void>("DELETE", `/api/trees/${enc(treeId)}/collaborators/${enc(userId)}`),

    scripts: () => call<ScriptView[]>("GET", "/api/scripts"),
    createScript: (script: { name: string; body: string; enabled?: boolean }) => call<ScriptView>("POST", "/api/scripts", script),
    updateScript: (scriptId: string, changes: { name?: string; body?: string; enabled?: boolean }) =>
      call<ScriptView>("PUT", `/api/scripts/${enc(scriptId)}`, changes),
    deleteScript: (scriptId: string) => call<void>("DELETE", `/api/scripts/${enc(scriptId)}`),
    /** A script's text, as its tree pages load it. */
    scriptText: async (scriptId: string): Promise<string> => {
      let response: Response;
      try {
        response = await fetch(scriptUrl(scriptId), { credentials: "same-origin", headers: { "X-Requested-With": "XMLHttpRequest" } });
      } catch {
        throw new NetworkError();
      }
      if (!response.ok) throw await errorFrom(response);
      return response.text();
    },
  };
}

/** Where a user's script is served from: this origin, so `script-src 'self'` lets it run. */
export function scriptUrl(scriptId: string): string {
  return `/api/scripts/${enc(scriptId)}.js`;
}

/** What part of a tree an export or the print view holds (SPEC §6, §14). */
export interface ExportScope {
  cardId?: string;
  column?: number;
  /** Only the cards without children. */
  leaves?: boolean;
}

export function exportUrl(treeId: string, format: ExportFormat, scope: ExportScope = {}): string {
  return `/api/export/${enc(treeId)}.${format}${scopeQuery(scope)}`;
}

/** The print view of the tree (or part of it): one page to print from the browser. */
export function printUrl(treeId: string, scope: ExportScope = {}): string {
  return `/trees/${enc(treeId)}/print${scopeQuery(scope)}`;
}

function scopeQuery(scope: ExportScope): string {
  const query = new URLSearchParams();
  if (scope.cardId) query.set("cardId", scope.cardId);
  if (scope.column) query.set("column", String(scope.column));
  if (scope.leaves) query.set("leaves", "1");
  const search = query.toString();
  return search ? `?${search}` : "";
}

/** A sentence for the person at the keyboard, whatever went wrong. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError || error instanceof NetworkError) return error.message;
  console.error(error);
  return "Something went wrong in Cardtree. Reload the page; if it happens again, tell your administrator.";
}
