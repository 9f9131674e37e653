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
import { confirmDialog } from "./dialogs/confirm.js";
import { deviceFor, forgetDevice } from "./offline/device.js";
import { forgetLocalData } from "./offline/local-data.js";
import { waitingEntries } from "./offline/outbox.js";
import { unsavedWords } from "./offline/unsaved-words.js";
import { registerServiceWorker } from "./offline/service-worker.js";
import { registerCollaboratorActions } from "./actions/collaborator-actions.js";
import { registerTreeActions } from "./actions/tree-actions.js";
import type { EventBus } from "./bus.js";
import { createAppContext, type AppContext } from "./context.js";
import { showHelpDialog } from "./dialogs/help.js";
import { showSwitcher } from "./dialogs/switcher.js";
import { h, mount } from "./dom.js";
import { installKeyboard } from "./keyboard.js";
import { withPart } from "./lazy.js";
import { warmMarkdown } from "./markdown.js";
import { notify } from "./notify.js";
import { interceptLinks, navigate, routeOf, type Route } from "./router.js";
import { scriptingApi, type ScriptingApi } from "./scripting.js";
import { renderLogin } from "./views/login.js";
import { renderPublicPage } from "./views/public-page.js";
import { createUserScripts } from "./user-scripts.js";
import { renderTreePage } from "./views/tree-page.js";
import { fetchTree, type TreeFetch } from "./model/tree-fetch.js";
import { keptUserId, mayBeSignedIn } from "./session.js";
import { renderTrees } from "./views/trees.js";
import { pageMessage } from "./views/tree-frame.js";
// Its own modules are the entry's anyway; imported here too so that it is no file of its own.
import "./shared-chunk.js";

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
/** The tree's requests sent by boot beside `GET /api/index`, for the first page shown (model/tree-fetch.ts). */
let treeFetch: TreeFetch | null = null;

function show(route: Route): void {
  disposePage?.();
  bus.offAll(pageContext);
  pageContext = {};
  for (const dialog of document.querySelectorAll("dialog[open]")) (dialog as HTMLDialogElement).close();
  root.className = `page-${route.page}`;
  app.preferences.apply();
  const user = app.session.user;
  // Sent by boot for this page only: another page, or none for lack of a user, cancels them.
  const started = treeFetch;
  treeFetch = null;
  if (started && !(user && route.page === "tree" && route.treeId === started.treeId)) started.cancel();
  if (route.page === "public") {
    disposePage = renderPublicPage(app, root, route.publicUrl, pageContext);
  } else if (route.page === "missing") {
    disposePage = undefined;
    document.title = "Not found · Cardtree";
    mount(root, pageMessage("There is no page at this address.", h("a", { class: "button", href: "/", "data-nav": true }, "Go to Cardtree")));
  } else if (!user) {
    disposePage = renderLogin(app, root, pageContext);
  } else if (route.page === "tree") {
    disposePage = renderTreePage(app, root, route.treeId, pageContext, started?.treeId === route.treeId ? started : null);
  } else if (route.page === "settings") {
    disposePage = undefined;
    // Loaded on first visit (lazy.ts); a page shown meanwhile wins.
    const context = pageContext;
    withPart(
      () => import("./views/settings.js"),
      ({ renderSettings }) => {
        if (pageContext === context) renderSettings(app, root, userScripts.loaded());
      },
    );
  } else if (route.page === "keys") {
    disposePage = undefined;
    const context = pageContext;
    withPart(
      () => import("./views/shortcut-settings.js"),
      ({ renderShortcutSettings }) => {
        if (pageContext === context) disposePage = renderShortcutSettings(app, root);
      },
    );
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
// The help is part of the entry (the touch bar lists its sections), so it is not loaded apart.
bus.on("modal:show:help", () => showHelpDialog());
bus.on("modal:show:appearance", () => withPart(() => import("./dialogs/appearance.js"), ({ showAppearanceDialog }) => showAppearanceDialog(app)));
bus.on("modal:show:switcher", () => {
  if (app.session.user) showSwitcher(app, app.openTree?.tree._id ?? null);
});
bus.on("user:login", () => void app.preferences.load());
bus.on("ui:logout", async () => {
  const user = app.session.user;
  // What this browser keeps for the user goes with the log-out (SPEC §13); changes not yet on
  // the server would go with it, so the writer chooses first.
  const waiting = user ? waitingEntries((await deviceFor(user._id)?.entries().catch(() => [])) ?? []).length : 0;
  // And the words the server refused for good, kept here until the writer lets them go.
  const kept = user ? unsavedWords(user._id).length : 0;
  if (waiting > 0 || kept > 0) {
    const changes = waiting === 0 ? "" : `${waiting} change${waiting === 1 ? "" : "s"} made on this device ${waiting === 1 ? "has" : "have"} not reached the server yet. `;
    const words = kept === 0 ? "" : `${kept} text${kept === 1 ? " is" : "s are"} kept under “Words not saved” on your trees page. `;
    const discard = await confirmDialog({
      title: "Changes not saved yet",
      message: `${changes}${words}Logging out deletes ${waiting + kept === 1 ? "it" : "them"} from this browser.`,
      confirmLabel: "Discard and log out",
      cancelLabel: "Stay logged in",
      danger: true,
    });
    if (!discard) return;
  }
  try {
    await app.api.logOut();
  } catch (error) {
    notify(describeError(error), { kind: "error" });
    return;
  }
  app.session.set(null);
  bus.trigger("user:logout");
  // The user's scripts, once loaded, run in this tab until it is replaced by a new page: the
  // next person to log in here must never type into a form they can read. So the log-in form
  // waits for the new page, and until then the tab only says what it is doing. Either way the
  // open tree closes first (its queue stops), then the user's data is deleted.
  const reload = userScripts.loaded();
  if (reload) mount(root, pageMessage("Logging out…"));
  else show({ page: "home" });
  if (user) {
    forgetLocalData();
    await forgetDevice(user._id).catch((error: unknown) => console.error("Deleting this browser's copy of your trees failed", error));
  }
  if (reload) location.assign("/");
  else navigate(bus, "/");
});

async function boot(): Promise<void> {
  try {
    const loading = app.session.load();
    // While the server says who is logged in, the Markdown renderer gets ready for the cards
    // of a tree page, in small tasks (markdown.ts).
    const route = routeOf(location.pathname);
    if (route.page === "tree" || route.page === "public") warmMarkdown();
    // What the first page asks for next goes out now too, not a round trip later: the user's
    // scripts' list, and on a tree's address the tree and its cards (model/tree-fetch.ts).
    if (mayBeSignedIn()) {
      if (route.page === "home" || route.page === "tree") userScripts.prefetch();
      treeFetch?.cancel();
      const kept = keptUserId();
      treeFetch = route.page === "tree" ? fetchTree(app.api, route.treeId, kept ? deviceFor(kept) : null) : null;
    }
    await loading;
    if (app.session.offline) {
      // Opened without the server: as the user last seen here; who it is is asked again online.
      window.addEventListener("online", () => void app.session.load().catch(() => undefined), { once: true });
    }
  } catch (error) {
    mount(root, pageMessage(describeError(error), h("button", { type: "button", class: "button", onclick: () => void boot() }, "Try again")));
    firstPageShown();
    return;
  }
  root.classList.remove("boot");
  installListeners();
  showWithScripts(routeOf(location.pathname));
  firstPageShown();
  // The page is painted with this browser's copy; the server's may differ (another browser).
  void app.preferences.load();
}

/**
 * The keys, links and actions every page answers, installed once, just before the first page
 * is shown: not in the task that evaluates the app's script, which Lighthouse counts whole
 * as blocking on a phone (issue 27, TBT), and which sends boot's requests first.
 */
let listening = false;
function installListeners(): void {
  if (listening) return;
  listening = true;
  interceptLinks(bus);
  installKeyboard(app);
  registerTreeActions(app);
  registerCollaboratorActions(app);
}

/** Settles once boot has shown the first page, or said why it could not. */
let firstPageShown: () => void = () => undefined;
const firstPage = new Promise<void>((resolve) => (firstPageShown = resolve));

/**
 * When the offline worker may install (offline/service-worker.ts says why not sooner): on a
 * page that draws cards, once its columns are drawn (`tree:load`), or after 10 s when they
 * never are (a tree that is missing, or cannot be reached); on any other page once boot has
 * shown it (at `load`, before boot's task, the worker's start-up made the log-in page's
 * task wait on a busy browser).
 */
function firstPageDrawn(): Promise<void> {
  const page = routeOf(location.pathname).page;
  if (page !== "tree" && page !== "public") return firstPage;
  return new Promise((resolve) => {
    bus.scripts.once("tree:load", () => resolve());
    setTimeout(resolve, 10_000);
  });
}

/**
 * Runs `task` in a task of its own, as soon as the browser can: before the other tasks waiting
 * where the browser has `scheduler.postTask` (Chromium), else after them.
 */
function nextTask(task: () => void): void {
  const scheduler = (globalThis as { scheduler?: { postTask?: (run: () => void, options: { priority: string }) => Promise<unknown> } }).scheduler;
  if (scheduler?.postTask) void scheduler.postTask(task, { priority: "user-blocking" });
  else setTimeout(task, 0);
}

registerServiceWorker(firstPageDrawn());
// Boot's first part (who is logged in, the tree's requests, the cards' worker, the renderer's
// import) in the next task, not in this one: the task that evaluates the app's script was
// the longest of a tree page's load (~60-70 ms of a phone's time; Lighthouse counts what is
// over 50 ms as blocking), and about a third of it was that part (issue 27, TBT).
nextTask(() => void boot());
