/**
 * Client-side routes: `/` (log-in or the user's trees), `/trees/:treeId`, `/p/:publicUrl`,
 * `/settings` (the user's own scripts), `/settings/keys` (their keyboard shortcuts). The server answers them all with index.html; links marked `data-nav` are followed here
 * through the bus (`ui:navigate`), so the page never reloads.
 */
import type { AppBus } from "./bus.js";

export type Route =
  | { page: "home" }
  | { page: "tree"; treeId: string }
  | { page: "public"; publicUrl: string }
  | { page: "settings" }
  | { page: "keys" }
  | { page: "missing"; path: string };

export function routeOf(pathname: string): Route {
  if (pathname === "/" || pathname === "") return { page: "home" };
  if (pathname === "/settings" || pathname === "/settings/") return { page: "settings" };
  if (pathname === "/settings/keys" || pathname === "/settings/keys/") return { page: "keys" };
  const tree = /^\/trees\/([^/]+)\/?$/.exec(pathname);
  if (tree) return { page: "tree", treeId: decodeURIComponent(tree[1]) };
  const shared = /^\/p\/([^/]+)\/?$/.exec(pathname);
  if (shared) return { page: "public", publicUrl: decodeURIComponent(shared[1]) };
  return { page: "missing", path: pathname };
}

export function navigate(bus: AppBus, path: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, "", path);
  else if (path !== location.pathname) history.pushState(null, "", path);
  bus.trigger("route", routeOf(location.pathname));
}

/** Follows in-app links without a reload; modified clicks (new tab) keep browser behaviour. */
export function interceptLinks(bus: AppBus): void {
  document.addEventListener("click", (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const link = (event.target as Element | null)?.closest?.("a[data-nav]");
    if (!(link instanceof HTMLAnchorElement)) return;
    event.preventDefault();
    bus.trigger("ui:navigate", link.getAttribute("href") ?? "/");
  });
  window.addEventListener("popstate", () => bus.trigger("route", routeOf(location.pathname)));
}
