/**
 * The browser client's entry point: publishes the scripting globals (`window.app`,
 * `window.Backbone`, `window.Mousetrap`), installs the keyboard and the global listeners,
 * finds out who is logged in, and shows the page for the current address. Pages are swapped
 * on `route`; each page's bus listeners are registered with a context and removed with it.
 * The user's own scripts (user-scripts.ts) are loaded before the first of their pages that
 * runs them (their trees, a tree) is drawn; the settings page runs none.
 */
import Mousetrap from "mousetrap";
import { api, describeError } from "./api.js";
import { registerCollaboratorActions } from "./actions/collaborator-actions.js";
import { registerTreeActions } from "./actions/tree-actions.js";
import { bus, type EventBus } from "./bus.js";
import { showAppearanceDialog } from "./dialogs/appearance.js";
import { showHelpDialog } from "./dialogs/help.js";
import { applyPreferences } from "./preferences.js";
import { h, mount } from "./dom.js";
import { installKeyboard } from "./keyboard.js";
import { notify } from "./notify.js";
import { interceptLinks, navigate, routeOf, type Route } from "./router.js";
import { app } from "./scripting.js";
import { currentUser, loadCurrentUser, setCurrentUser } from "./session.js";
import { renderLogin } from "./views/login.js";
import { renderPublicPage } from "./views/public-page.js";
import { renderSettings } from "./views/settings.js";
import { loadUserScripts, userScriptsLoaded, userScriptsReady } from "./user-scripts.js";
import { renderTreePage } from "./views/tree-page.js";
import { renderTrees } from "./views/trees.js";
import { pageMessage } from "./views/tree-frame.js";

declare global {
  interface Window {
    app: typeof app;
    Backbone: EventBus;
    Mousetrap: typeof Mousetrap;
  }
}

window.app = app;
window.Backbone = bus;
window.Mousetrap = Mousetrap;

const root = document.getElementById("root")!;
let pageContext: object = {};
let disposePage: (() => void) | void = undefined;

function show(route: Route): void {
  disposePage?.();
  bus.off(null, null, pageContext);
  pageContext = {};
  for (const dialog of document.querySelectorAll("dialog[open]")) (dialog as HTMLDialogElement).close();
  root.className = `page-${route.page}`;
  applyPreferences();
  const user = currentUser();
  if (route.page === "public") {
    disposePage = renderPublicPage(root, route.publicUrl, pageContext);
  } else if (route.page === "missing") {
    disposePage = undefined;
    document.title = "Not found · Cardtree";
    mount(root, pageMessage("There is no page at this address.", h("a", { class: "button", href: "/", "data-nav": true }, "Go to Cardtree")));
  } else if (!user) {
    disposePage = renderLogin(root, pageContext);
  } else if (route.page === "tree") {
    disposePage = renderTreePage(root, route.treeId, pageContext);
  } else if (route.page === "settings") {
    disposePage = renderSettings(root);
  } else {
    disposePage = renderTrees(root, pageContext);
  }
}

/**
 * Shows a route, once the user's scripts have run when it is a page that runs them. Routes
 * are shown in turn, so a page waiting for the scripts is not overtaken; with nothing to
 * wait for, the page is shown at once, as scripts triggering `ui:navigate` expect.
 */
let showing: Promise<void> = Promise.resolve();
let waiting = 0;
function showWithScripts(route: Route): void {
  const user = currentUser();
  const runsScripts = user !== null && (route.page === "home" || route.page === "tree");
  if (waiting === 0 && (!runsScripts || userScriptsReady())) return show(route);
  waiting++;
  showing = showing
    .then(async () => {
      if (runsScripts) await loadUserScripts(user._id);
      show(route);
    })
    .finally(() => waiting--);
}

bus.on("route", (route: Route) => showWithScripts(route));
bus.on("ui:navigate", (path: string) => navigate(path));
bus.on("modal:show:help", () => showHelpDialog());
bus.on("modal:show:appearance", () => showAppearanceDialog());
bus.on("ui:logout", async () => {
  try {
    await api.logOut();
  } catch (error) {
    notify(describeError(error), { kind: "error" });
    return;
  }
  setCurrentUser(null);
  bus.trigger("user:logout");
  // The user's scripts are still running in this tab: only a new page is free of them, and
  // the next person to log in here must not run them.
  if (userScriptsLoaded()) location.assign("/");
  else navigate("/");
});

async function boot(): Promise<void> {
  try {
    await loadCurrentUser();
  } catch (error) {
    mount(root, pageMessage(describeError(error), h("button", { type: "button", class: "button", onclick: () => void boot() }, "Try again")));
    return;
  }
  root.classList.remove("boot");
  showWithScripts(routeOf(location.pathname));
}

interceptLinks();
installKeyboard();
registerTreeActions();
registerCollaboratorActions();
void boot();
