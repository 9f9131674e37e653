/**
 * The service worker (SPEC §13, "The client works offline"): the app opens with no network.
 *
 * - It keeps this build's shell: index.html and the hashed script, style sheet, manifest and
 *   icons that scripts/build-web.mjs lists in `__CARDTREE_BUILD__`, in a cache named after
 *   the build. The trees themselves are kept by the page, per user, in IndexedDB
 *   (offline/idb.ts), never here: this cache holds nothing of anyone's.
 * - Pages of the app (a navigation) are asked of the server first and come from the cache
 *   only when it cannot be reached, so a deployed version is what an online writer gets. The
 *   browser asks for the page itself as the navigation starts (navigation preload), not once
 *   this worker has started and run its handler: a stopped worker's start (tens of
 *   milliseconds, more on a phone) no longer comes before every page's request (issue 26).
 *   The preload is made for every page of the scope, so every page is answered with it, the
 *   app's or not (an export or the API document opened in a tab): one left to the browser was
 *   asked for a second time. The hashed files never change under their names: from the cache
 *   first.
 * - The typefaces (hashed `.woff2`/`.woff` files) are not in the shell: a writer uses one or
 *   two of the ten. Each is kept in the build's cache the first time the page loads it, and
 *   comes from there after, so a face chosen online is there offline.
 * - The API is not touched otherwise: its requests (not navigations) go to the network as they are.
 * - A new build's worker installs beside the old one and waits; the page shows "A new version
 *   is ready" (offline/service-worker.ts) and sends `skip-waiting` when the writer reloads.
 */
/// <reference lib="webworker" />
export {};

declare const self: ServiceWorkerGlobalScope;
declare const __CARDTREE_BUILD__: { version: string; shell: string[] };

const BUILD = __CARDTREE_BUILD__;
const PREFIX = "cardtree-shell-";
const CACHE = `${PREFIX}${BUILD.version}`;
/** The cache key of index.html, which the server sends for every page of the app. */
const PAGE = "/index.html";
const APP_PAGES = /^\/($|trees\/[^/]+\/?$|p\/[^/]+\/?$|settings(\/keys)?\/?$)/;
/** A file of the app under its content-hashed name (scripts/build-web.mjs; the server's HASHED). */
const HASHED = /^\/app-[A-Z0-9]+\.(js|css)$/;
/** A typeface's file under its content-hashed name (the server's HASHED_FONT). */
const FONT = /^\/[a-z0-9-]+-[A-Z0-9]{8,}\.woff2?$/;

self.addEventListener("install", (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      // The page as the server sends it for "/" (no-cache there: never an older one).
      const page = await fetch("/", { cache: "no-store", credentials: "same-origin" });
      if (!page.ok) throw new Error(`The app page answered ${page.status}`);
      await cache.put(PAGE, page);
      // A content-hashed file is the same bytes under its name for ever (the server sends it
      // `immutable`): the copy the page has just downloaded, in the HTTP cache, is kept, not
      // downloaded a second time (on a first visit, the whole app again on a phone's data).
      // The other files of the shell (the icons, the manifest) come from the server.
      await cache.addAll(BUILD.shell.map((url) => new Request(url, { cache: HASHED.test(url) || FONT.test(url) ? "default" : "no-store" })));
    })(),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name.startsWith(PREFIX) && name !== CACHE) await caches.delete(name);
      await self.registration.navigationPreload?.enable();
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("message", (event) => {
  const data = event.data as { type?: string } | null;
  if (data?.type === "skip-waiting") void self.skipWaiting();
  if (data?.type === "version") event.source?.postMessage({ type: "version", version: BUILD.version });
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.mode === "navigate") {
    // Every page, the app's or not (an export, the API document, the print view): the browser
    // has asked for it already (navigation preload), and a page left to the browser would be
    // asked for a second time.
    event.respondWith(APP_PAGES.test(url.pathname) ? pageFor(event) : fromServer(event));
  } else if (BUILD.shell.includes(url.pathname)) {
    event.respondWith(shellFile(request, url.pathname));
  } else if (FONT.test(url.pathname)) {
    event.respondWith(fontFile(request, url.pathname));
  }
});

/** The server's answer to a navigation: the preloaded one when the browser made one (none where it has no preload). */
async function fromServer(event: FetchEvent): Promise<Response> {
  const preloaded = (await event.preloadResponse) as Response | undefined;
  return preloaded ?? fetch(event.request);
}

async function pageFor(event: FetchEvent): Promise<Response> {
  try {
    return await fromServer(event);
  } catch (error) {
    const cached = await caches.match(PAGE, { cacheName: CACHE });
    if (cached) return cached;
    throw error;
  }
}

async function shellFile(request: Request, path: string): Promise<Response> {
  const cached = await caches.match(path, { cacheName: CACHE });
  return cached ?? fetch(request);
}

/** From the cache if kept; else from the server, kept for next time (a hashed name never changes). */
async function fontFile(request: Request, path: string): Promise<Response> {
  const cache = await caches.open(CACHE);
  const cached = await cache.match(path);
  if (cached) return cached;
  const response = await fetch(request);
  if (response.ok) await cache.put(path, response.clone());
  return response;
}
