/**
 * Registers the service worker (src/web/sw.ts) and shows its update flow: when a new build's
 * worker is installed and waiting, a notice says so with a "Reload" button; reloading lets
 * the new worker take over and opens the new version (never a stale app after a deploy).
 * Changes waiting in the outbox are kept across the reload (model/sync.ts).
 *
 * A first visit's worker fetches and stores the whole shell (21 files, ~170 KB gzip on 27
 * November) as it installs. Registered at the page's `load`, that ran while a tree page was
 * still waiting for its cards: on a phone's network it shared the bandwidth with them, and on
 * a busy device the worker's thread and the browser's cache writes took turns with the page's
 * first screen (issue 27). So it is registered once the page says its first screen is done
 * (`afterFirstPage`, main.ts), and never before `load`.
 */
import { notify } from "../notify.js";

let announced = false;

export function registerServiceWorker(afterFirstPage: Promise<void>): void {
  if (!("serviceWorker" in navigator) || !window.isSecureContext) return;
  const container = navigator.serviceWorker;
  let reloading = false;
  window.addEventListener("load", () => {
    // In a task of its own, not at the end of the page's task that settled `afterFirstPage`.
    void afterFirstPage.then(() => setTimeout(() => register(container), 0));
  });
  container.addEventListener("controllerchange", () => {
    // The new version took over (this tab asked, or another tab did): show it.
    if (!announced || reloading) return;
    reloading = true;
    location.reload();
  });
}

function register(container: ServiceWorkerContainer): void {
  container
    .register("/sw.js", { scope: "/", updateViaCache: "none" })
    .then((registration) => {
      const hadController = container.controller !== null;
      const waiting = () => {
        // The first worker of this browser is no update: nothing to reload for.
        if (registration.waiting && hadController) announce(registration.waiting);
      };
      waiting();
      registration.addEventListener("updatefound", () => {
        const installing = registration.installing;
        installing?.addEventListener("statechange", () => {
          if (installing.state === "installed") waiting();
        });
      });
      // A tab open for long hears of a deploy without being reloaded: look now and then.
      window.setInterval(() => void registration.update().catch(() => undefined), 30 * 60 * 1000);
      document.addEventListener("visibilitychange", () => {
        if (document.visibilityState === "visible") void registration.update().catch(() => undefined);
      });
    })
    .catch((error: unknown) => console.warn("The offline worker could not be registered", error));
}

function announce(worker: ServiceWorker): void {
  if (announced) return;
  announced = true;
  document.body.dataset.update = "ready";
  notify("A new version of Cardtree is ready.", {
    timeout: 0,
    action: { label: "Reload", run: () => worker.postMessage({ type: "skip-waiting" }) },
  });
}
