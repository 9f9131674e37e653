/**
 * The browser client's entry point: publishes the scripting globals (`window.app`,
 * `window.Backbone`, `window.Mousetrap`), installs the keyboard and the global listeners,
 * finds out who is logged in, and shows the page for the current address. Pages are swapped
 * on `route`; each page's bus listeners are registered with a context and removed with it.
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
  } else {
    disposePage = renderTrees(root, pageContext);
  }
}

bus.on("route", (route: Route) => show(route));
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
  navigate("/");
});

async function boot(): Promise<void> {
  try {
    await loadCurrentUser();
  } catch (error) {
    mount(root, pageMessage(describeError(error), h("button", { type: "button", class: "button", onclick: () => void boot() }, "Try again")));
    return;
  }
  root.classList.remove("boot");
  show(routeOf(location.pathname));
}

interceptLinks();
installKeyboard();
registerTreeActions();
registerCollaboratorActions();
void boot();
