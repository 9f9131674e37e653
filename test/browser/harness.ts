/**
 * Shared set-up for the browser tests: Debian's Chromium driven by playwright-core (never a
 * downloaded browser), the real server on a random port, and small helpers to log a page in,
 * wait for saves and keep screenshots under test-results/screenshots/.
 *
 * A suite calls `useWorld()` (a world and the end-of-suite check that no watched page logged
 * an error) or, for the usual one logged-in writer with a tree, `useWriterSession()`, at the
 * top of its `describe`. Both register their hooks where they are called: vitest runs
 * `beforeAll`/`beforeEach` hooks in the order they are defined and `after*` hooks in reverse
 * (sequence.hooks "stack"), so a suite's own `beforeAll` after the call sees a ready session.
 *
 * Without /usr/bin/chromium loading this file throws with the command that installs it
 * (`npm test` installs it itself when run as root); `CARDTREE_TEST_SKIP_BROWSER=1` leaves the
 * suites out instead, and the run's last lines count them (test/helpers/tool-suites.ts).
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Download, type Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, expect, inject } from "vitest";
import { buildTree, buildUser, type Api } from "../helpers/api.js";
import { CHROMIUM, CHROMIUM_ARGS } from "../helpers/chromium-server.js";
import { freshDataDir, startTestServer, type TestServer } from "../helpers/server.js";

export { CHROMIUM };
const SCREENSHOTS = path.resolve(import.meta.dirname, "../../test-results/screenshots");


export { describeInBrowser } from "../helpers/tool-suites.js";

export interface ContextOptions {
  width?: number;
  height?: number;
  /** A phone: touch events and a mobile viewport. */
  touch?: boolean;
  /** Lets a test inject a script inline (axe-core) past the page's CSP. */
  bypassCSP?: boolean;
}

export interface BrowserWorld {
  /** The server now (a new one after `restartServer`). */
  readonly server: TestServer;
  browser: Browser;
  /** A fresh, isolated browser profile (its own cookies and localStorage). */
  newContext(options?: ContextOptions): Promise<BrowserContext>;
  /** Stops the server and starts it again on its data directory (give it a fixed PORT to keep its address). */
  restartServer(): Promise<void>;
  close(): Promise<void>;
}

export interface WorldOptions {
  /** The server's environment on top of the test defaults (e.g. a fixed `PORT`). */
  serverEnv?: Record<string, string>;
}

/**
 * The run's one Chromium (test/helpers/chromium-server.ts), connected to: the caller makes its
 * own contexts in it, each a fresh profile, and `close()` closes them and disconnects, leaving
 * Chromium to the other files. Without the broker (vitest run with another config) it launches
 * a Chromium of its own, which `close()` then ends.
 */
export async function sharedBrowser(): Promise<Browser> {
  const broker = inject("chromiumBroker");
  if (!broker) return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const res = await fetch(broker);
  const answer = await res.text();
  if (!res.ok) throw new Error(answer);
  return chromium.connect(answer, { timeout: 60_000 });
}

/**
 * A download's bytes in a file of this machine. The browser is connected to, not launched, so
 * playwright keeps the file on Chromium's side: `download.path()` throws, `saveAs` copies it.
 */
export async function downloadedFile(download: Download): Promise<string> {
  const file = path.join(await freshDataDir(), path.basename(download.suggestedFilename()) || "download");
  await download.saveAs(file);
  return file;
}

export async function startWorld({ serverEnv }: WorldOptions = {}): Promise<BrowserWorld> {
  const [first, browser] = await Promise.all([startTestServer(serverEnv ? { env: serverEnv } : {}), sharedBrowser()]);
  let server = first;
  return {
    get server() {
      return server;
    },
    browser,
    newContext: ({ width = 1280, height = 800, touch = false, bypassCSP = false } = {}) =>
      browser.newContext({
        baseURL: server.url,
        viewport: { width, height },
        reducedMotion: "reduce",
        acceptDownloads: true,
        hasTouch: touch,
        isMobile: touch,
        bypassCSP,
      }),
    restartServer: async () => {
      server = await server.restart();
    },
    close: async () => {
      await browser.close();
      await server.stop();
    },
  };
}

/**
 * Chromium's own console error when it cannot fetch the service worker's script to look for
 * an update (the network cut or changing under it). The page catches its own update checks
 * (src/web/offline/service-worker.ts); a test that cuts the network allows this one, as it
 * allows ERR_INTERNET_DISCONNECTED.
 */
export const WORKER_SCRIPT_UNREACHABLE = /^An unknown error occurred when fetching the script\.$/;

/** Fails the test on any uncaught error or console error in the page. */
export function watchErrors(page: Page, allowed: RegExp[] = []): string[] {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    const text = message.text();
    // The browser logs every 4xx/5xx response; the tests check those through the UI.
    if (/Failed to load resource/.test(text) || allowed.some((re) => re.test(text))) return;
    errors.push(`console: ${text}`);
  });
  return errors;
}

export interface LoggedInPage {
  page: Page;
  context: BrowserContext;
  /** The same user through the API, with their credentials. */
  api: Api & { user: any };
}

/** A new user, made through the API, whose session cookie the context then carries. */
export async function loggedInPage(world: BrowserWorld, prefix = "writer", options: ContextOptions = {}): Promise<LoggedInPage> {
  const api = await buildUser(world.server.url, prefix);
  const context = await world.newContext(options);
  const login = await context.request.post("/api/login", { data: api.credentials });
  if (login.status() !== 200) throw new Error(`log-in failed: ${login.status()}`);
  const page = await context.newPage();
  return { page, context, api };
}

/**
 * A context of `browser` signed in as `api`'s user, at `baseURL` (the server, or a proxy in
 * front of it): a writer's own desktop browser, for suites that start their server or proxy
 * themselves rather than use a world.
 */
export async function signedInContext(browser: Browser, baseURL: string, api: Pick<Api, "credentials">): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 800 }, reducedMotion: "reduce" });
  const login = await context.request.post("/api/login", { data: api.credentials });
  if (login.status() !== 200) {
    await context.close();
    throw new Error(`log-in failed: ${login.status()}`);
  }
  return context;
}

/** Opens a tree page and waits until its columns are drawn and a card is active. */
export async function openTree(page: Page, treeId: string): Promise<void> {
  await page.goto(`/trees/${treeId}`);
  await page.locator(".columns").waitFor();
  await page.waitForFunction(() => (window as any).app.get("currentTree") !== null);
}

/** Waits until every queued change has reached the server. */
export async function waitForSaved(page: Page): Promise<void> {
  await page.waitForFunction(() => {
    const status = document.querySelector<HTMLElement>(".topbar-status");
    return status?.dataset.state === "saved";
  });
}

/** Opens the active card's editor, types `text` at the end of its content, saves (Ctrl+Enter) and waits until saved. */
export async function appendToActiveCard(page: Page, text: string): Promise<void> {
  await page.keyboard.press("Enter");
  await page.keyboard.press("End");
  await page.keyboard.type(text);
  await page.keyboard.press("Control+Enter");
  await waitForSaved(page);
}

export async function activeCardId(page: Page): Promise<string | null> {
  return page.evaluate(() => (window as any).app.get("cardId"));
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });
}

/** The tree's cards as the server has them, in tree order. */
export async function serverCards(api: Api, treeId: string): Promise<any[]> {
  const res = await api.get(`/api/trees/${treeId}/cards`);
  if (res.status !== 200) throw new Error(`cards: ${res.status} ${res.text}`);
  return res.body;
}

/** What a suite's hooks and tests read from `useWorld()`; the getters throw before `beforeAll`. */
export interface WorldSession {
  readonly world: BrowserWorld;
  /** Collects the page's errors (`watchErrors`) for the end-of-suite check, and returns them. */
  watch(page: Page, allowed?: RegExp[]): string[];
  /** Every error collected so far, from every watched page (`allowErrors` does not apply). */
  readonly errors: string[];
}

/**
 * Starts a world before the suite's tests; after them, checks that no watched page logged an
 * error (but those matching `allowErrors`), then closes the world.
 */
export function useWorld({ allowErrors = [], ...options }: { allowErrors?: RegExp[] } & WorldOptions = {}): WorldSession {
  let world: BrowserWorld | undefined;
  const watched: string[][] = [];
  beforeAll(async () => {
    world = await startWorld(options);
  });
  afterAll(async () => {
    try {
      expect(watched.flat().filter((error) => !allowErrors.some((re) => re.test(error)))).toEqual([]);
    } finally {
      await world?.close();
    }
  });
  return {
    get world() {
      return ready(world, "world");
    },
    watch(page, allowed) {
      const errors = watchErrors(page, allowed);
      watched.push(errors);
      return errors;
    },
    get errors() {
      return watched.flat();
    },
  };
}

export interface WriterSessionOptions {
  /** A tree the writer makes through the API for the tests (none without it). */
  tree?: { name: string; seed?: string };
  /**
   * Make `tree` afresh before every test, instead of once before them all (when each test
   * goes on with the tree as the one before left it).
   */
  treePerTest?: boolean;
  /** Open `tree` in the page once it is made (`openTree`); true by default. */
  openTree?: boolean;
  /** Errors the end-of-suite check lets pass (see `useWorld`). */
  allowErrors?: RegExp[];
}

/** `useWorld()`'s session, with the writer's page and API client and the tree's id. */
export interface WriterSession extends WorldSession, LoggedInPage {
  readonly treeId: string;
}

/**
 * The usual suite: a world, one new user logged in in a page whose errors are watched, and,
 * given `tree`, a tree of theirs opened in that page.
 */
export function useWriterSession(options: WriterSessionOptions = {}): WriterSession {
  const { tree, treePerTest = false, openTree: open = true, allowErrors } = options;
  const session = useWorld({ allowErrors });
  let writer: LoggedInPage | undefined;
  let treeId: string | undefined;
  const makeTree = async () => {
    const { page, api } = ready(writer, "writer");
    treeId = (await buildTree(api, tree))._id as string;
    if (open) await openTree(page, treeId);
  };
  beforeAll(async () => {
    writer = await loggedInPage(session.world);
    session.watch(writer.page);
    if (tree && !treePerTest) await makeTree();
  });
  if (tree && treePerTest) beforeEach(makeTree);
  return {
    get world() {
      return session.world;
    },
    watch: (page, allowed) => session.watch(page, allowed),
    get errors() {
      return session.errors;
    },
    get page() {
      return ready(writer, "writer").page;
    },
    get context() {
      return ready(writer, "writer").context;
    },
    get api() {
      return ready(writer, "writer").api;
    },
    get treeId() {
      if (!tree) throw new Error("This suite's useWriterSession() was given no `tree`, so it has no treeId.");
      return ready(treeId, "tree");
    },
  };
}

function ready<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`The ${what} is not ready: read it in a hook or a test, after the session's beforeAll.`);
  return value;
}

/**
 * Reads the device's database of the user this browser last saw, never creating it: the record
 * of `store` at `key` (null when absent), or with no key how many records `store` holds; null
 * when there is no such user, database or store.
 */
export async function deviceRead(page: Page, store: "outbox" | "trees", key: string | null = null): Promise<unknown> {
  return page.evaluate(
    async ({ store, key }) => {
      const user = JSON.parse(localStorage.getItem("cardtree:user") ?? "null");
      if (!user) return null;
      const names = (await indexedDB.databases()).map((db) => db.name);
      if (!names.includes(`cardtree-${user._id}`)) return null;
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const request = indexedDB.open(`cardtree-${user._id}`);
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      });
      try {
        if (!db.objectStoreNames.contains(store)) return null;
        return await new Promise<unknown>((resolve) => {
          const records = db.transaction(store).objectStore(store);
          const request: IDBRequest = key === null ? records.count() : records.get(key);
          request.onsuccess = () => resolve(request.result ?? null);
          request.onerror = () => resolve(null);
        });
      } finally {
        db.close();
      }
    },
    { store, key },
  );
}

/** Whether the tree is kept on the device now. */
export async function hasCopy(page: Page, treeId: string): Promise<boolean> {
  return (await deviceRead(page, "trees", treeId)) !== null;
}

/**
 * Records, from the page's next navigation on, each text the progress panel shows (its step
 * line), in order; `progressSaid` reads them back.
 */
export async function recordProgress(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const said: string[] = ((window as any).__progress = []);
    new MutationObserver(() => {
      const text = document.querySelector(".progress-step")?.textContent;
      if (text && said[said.length - 1] !== text) said.push(text);
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
}

/** What the progress panel said since `recordProgress`. */
export function progressSaid(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as any).__progress);
}
