/**
 * The app context: everything the page holds for as long as it lives (the bus, the REST
 * client, who is logged in, the keyboard scope, the appearance preferences, the trees seen
 * so far, the open tree), made
 * once by main.ts and handed to the modules that need it, instead of each module keeping
 * its own piece at module level.
 */
import { createApi, type ApiClient, type Tree } from "./api.js";
import { appBus, createBus, type AppBus } from "./bus.js";
import type { OpenTree } from "./controller/tree-controller.js";
import { AppearancePreferences } from "./preferences.js";
import { KeyScope } from "./scope.js";
import { Session } from "./session.js";

export interface AppContext {
  readonly bus: AppBus;
  readonly api: ApiClient;
  readonly session: Session;
  readonly keys: KeyScope;
  /** Theme and text size: this browser's copy and the server's. */
  readonly preferences: AppearancePreferences;
  /** Trees the page has seen, so dialogs opened by id can show names. */
  readonly trees: Map<string, Tree>;
  /** The tree on screen, as user scripts see it (`window.app`); set by the tree pages. */
  openTree: OpenTree | null;
}

export function createAppContext(): AppContext {
  const api = createApi();
  const bus = appBus(createBus());
  const session = new Session(api);
  return {
    bus,
    api,
    session,
    keys: new KeyScope(),
    preferences: new AppearancePreferences(bus, session, api),
    trees: new Map(),
    openTree: null,
  };
}
