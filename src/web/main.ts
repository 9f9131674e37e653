/**
 * The browser client's entry point: publishes the scripting globals (`window.app`,
 * `window.Backbone`, `window.Mousetrap`), installs the keyboard and the global listeners,
 * finds out who is logged in, and shows the page for the current address. Pages are swapped
 * on `route`; each page's bus listeners are registered with a context and removed with it.
 * The user's own scripts (user-scripts.ts) are loaded before the first of their pages that
 * runs them (their trees, a tree) is drawn; the settings page runs none.
 */
import Mousetrap from "mousetrap";
import { describeError } from "./api.js";
import { registerCollaboratorActions } from "./actions/collaborator-actions.js";
import { registerTreeActions } from "./actions/tree-actions.js";
import type { EventBus } from "./bus.js";
import { createAppContext, type AppContext } from "./context.js";
import { showAppearanceDialog } from "./dialogs/appearance.js";
import { showHelpDialog } from "./dialogs/help.js";
import { h, mount } from "./dom.js";
import { installKeyboard } from "./keyboard.js";
import { notify } from "./notify.js";
import { interceptLinks, navigate, routeOf, type Route } from "./router.js";
import { scriptingApi, type ScriptingApi } from "./scripting.js";
import { renderLogin } from "./views/login.js";
import { renderPublicPage } from "./views/public-page.js";
import { renderSettings } from "./views/settings.js";
import { createUserScripts } from "./user-scripts.js";
import { renderTreePage } from "./views/tree-page.js";
import { renderTrees } from "./views/trees.js";
import { pageMessage } from "./views/tree-frame.js";

declare global {
  interface Window {
    app: ScriptingApi;
    Backbone: EventBus;
    Mousetrap: typeof Mousetrap;
  }
}

const app: AppContext = createAppContext();
const { bus } = app;
const userScripts = createUserScripts(app);

window.app = scriptingApi(app);
window.Backbone = bus.scripts;
window.Mousetrap = Mousetrap;

const root = document.getElementById("root")!;
let pageContext: object = {};
let disposePage: (() => void) | void = undefined;

function show(route: Route): void {
  disposePage?.();
  bus.offAll(pageContext);
  pageContext = {};
  for (const dialog of document.querySelectorAll("dialog[open]")) (dialog as HTMLDialogElement).close();
  root.className = `page-${route.page}`;
  app.preferences.apply();
  const user = app.session.user;
  if (route.page === "public") {
    disposePage = renderPublicPage(app, root, route.publicUrl, pageContext);
  } else if (route.page === "missing") {
    disposePage = undefined;
    document.title = "Not found · Cardtree";
    mount(root, pageMessage("There is no page at this address.", h("a", { class: "button", href: "/", "data-nav": true }, "Go to Cardtree")));
  } else if (!user) {
    disposePage = renderLogin(app, root, pageContext);
  } else if (route.page === "tree") {
    disposePage = renderTreePage(app, root, route.treeId, pageContext);
  } else if (route.page === "settings") {
    disposePage = renderSettings(app, root, userScripts.loaded());
  } else {
    disposePage = renderTrees(app, root, pageContext);
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
  const user = app.session.user;
  const runsScripts = user !== null && (route.page === "home" || route.page === "tree");
  if (waiting === 0 && (!runsScripts || userScripts.ready())) return show(route);
  waiting++;
  showing = showing
    .then(async () => {
      if (runsScripts) await userScripts.load(user._id);
      show(route);
    })
    .finally(() => waiting--);
}

bus.on("route", (route) => showWithScripts(route));
bus.on("ui:navigate", (path) => navigate(bus, path));
bus.on("modal:show:help", () => showHelpDialog());
bus.on("modal:show:appearance", () => showAppearanceDialog(app));
bus.on("user:login", () => void app.preferences.load());
bus.on("ui:logout", async () => {
  try {
    await app.api.logOut();
  } catch (error) {
    notify(describeError(error), { kind: "error" });
    return;
  }
  app.session.set(null);
  bus.trigger("user:logout");
  // The user's scripts are still running in this tab: only a new page is free of them, and
  // the next person to log in here must not run them.
  if (userScripts.loaded()) location.assign("/");
  else navigate(bus, "/");
});

async function boot(): Promise<void> {
  try {
    await app.session.load();
  } catch (error) {
    mount(root, pageMessage(describeError(error), h("button", { type: "button", class: "button", onclick: () => void boot() }, "Try again")));
    return;
  }
  root.classList.remove("boot");
  showWithScripts(routeOf(location.pathname));
  // The page is painted with this browser's copy; the server's may differ (another browser).
  void app.preferences.load();
}

interceptLinks(bus);
installKeyboard(app);
registerTreeActions(app);
registerCollaboratorActions(app);
void boot();
