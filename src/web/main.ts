/**
 * The browser client's entry point: publishes the scripting globals (`window.app`,
 * `window.Backbone`, `window.Mousetrap`), installs the keyboard and the global listeners,
 * finds out who is logged in, and shows the page for the current address. Pages are swapped
 * on `route`; each page's bus listeners are registered with a context and removed with it.
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
  } else {
    disposePage = renderTrees(app, root, pageContext);
  }
}

bus.on("route", (route) => show(route));
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
  navigate(bus, "/");
});

async function boot(): Promise<void> {
  try {
    await app.session.load();
  } catch (error) {
    mount(root, pageMessage(describeError(error), h("button", { type: "button", class: "button", onclick: () => void boot() }, "Try again")));
    return;
  }
  root.classList.remove("boot");
  show(routeOf(location.pathname));
  // The page is painted with this browser's copy; the server's may differ (another browser).
  void app.preferences.load();
}

interceptLinks(bus);
installKeyboard(app);
registerTreeActions(app);
registerCollaboratorActions(app);
void boot();
