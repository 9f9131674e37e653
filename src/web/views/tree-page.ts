/**
 * `/trees/:treeId`: loads the tree and its cards, shows them in columns with the toolbar
 * (import, export, share, help) and the save status, and answers the tree-level events of
 * this page (`modal:show:import`, `cards:import`, `modal:show:export`, files dropped on it). Also warns before the
 * tab closes while changes are still on their way.
 */
import { ApiError, describeError, NetworkError, type Card, type Tree } from "../api.js";
import { deviceCoordinator, deviceFor } from "../offline/device.js";
import { keepUnsavedWords, keepWordsOfLostTree } from "../offline/unsaved-words.js";
import { isTreeGone } from "../model/sync.js";
import { rememberTrees } from "../actions/tree-actions.js";
import type { AppContext } from "../context.js";
import { TreeController } from "../controller/tree-controller.js";
import { titleOf } from "../controller/recovery.js";
import { keepDraftsOfGoneTree } from "../controller/editing.js";
import { fetchTree, type TreeFetch } from "../model/tree-fetch.js";
import type { IndexedCards } from "../model/indexed-cards.js";
import { showLoginAgainDialog } from "../dialogs/login-again.js";
import { append, h, mount } from "../dom.js";
import { whenWriterPauses } from "../idle.js";
import { withPart } from "../lazy.js";
import { loadMarkdown, markdownReady } from "../markdown.js";
import { notify, notifyWithText } from "../notify.js";
import { acceptFileDrops, importProblem, readImportFile } from "./file-drop.js";
import { formatBytes, formatCount, nextFrame, nextTask, showProgress } from "./progress.js";
import { barButton, topBar, type TopBar } from "./header.js";
import { mountColumns, pageMessage } from "./tree-frame.js";
import { renderSyncStatus } from "./sync-status.js";
import { UndoStack } from "../history/undo.js";
import { TreePresence } from "../live/presence.js";
import { bindingsFor, refreshShortcuts } from "../keyboard.js";
import type { EventName } from "../events.js";
import { describeCombo } from "../../shared/shortcuts.js";

/**
 * `started`: this tree's requests, when the page's boot already sent them (model/tree-fetch.ts);
 * used by the first load only (a "Try again" asks anew).
 */
export function renderTreePage(app: AppContext, root: HTMLElement, treeId: string, context: object, started: TreeFetch | null = null): () => void {
  // The signed-in user's own keys (known now: the session has loaded).
  refreshShortcuts();
  const bar = topBar(app);
  const main = h("main", { class: "tree-page" }, pageMessage("Opening the tree…"));
  mount(root, bar.element, main);
  let controller: TreeController | null = null;
  let undo: UndoStack | null = null;
  let presence: TreePresence | null = null;
  let disposed = false;

  const warnBeforeClose = (event: BeforeUnloadEvent) => {
    if (controller?.hasUnsavedWork()) {
      event.preventDefault();
    }
  };
  window.addEventListener("beforeunload", warnBeforeClose);

  const userId = app.session.user?._id ?? "";
  const device = deviceFor(userId);
  // The copy on the device is written when the tab goes away, so it opens offline as it was.
  const keepCopy = () => void controller?.keepCopy({ now: true });
  window.addEventListener("pagehide", keepCopy);

  const open = async (tree: Tree, cards: Card[] | IndexedCards, fromDevice: number | null) => {
    // The cards' renderer is a chunk of its own (markdown.ts), asked for as the page started;
    // its warm-up, when the app started one, is done first.
    await markdownReady();
    if (disposed) return;
    controller = new TreeController(
      app,
      tree,
      cards,
      false,
      {
        status: (status) => renderSyncStatus(bar.status, status, () => controller?.retrySaving()),
        refused: (kind, card, error, text) => refused(controller!, userId, kind, card, error, text),
        signedOut: () => showLoginAgainDialog(app, () => controller?.resumeSaving()),
      },
      { store: device, coordinator: deviceCoordinator(), userId, fromCopy: fromDevice !== null },
    );
    undo = new UndoStack(app.bus, app.api, controller);
    fillBar(app, bar, tree, true);
    renderSyncStatus(bar.status, { kind: "saved" }, () => undefined);
    mountColumns(app, main, controller);
    // The page's frame is laid out in a frame of its own, the cards drawn in a task after it;
    // the columns and the first screen's Markdown get ready meanwhile, in short tasks.
    const framed = nextFrame();
    await controller.prepare();
    await framed;
    if (disposed) return;
    // The page is the open tree (window.app answers about it) once every card is drawn.
    const shown = controller;
    const drawn = controller.start(() => (app.openTree = shown));
    listen(app, controller, main, context);
    // Who else is in the tree, in a task of its own after the first screen's: its start (the
    // tab's random id, the presence stream, its listeners) was ~10-25 ms of a phone's time in
    // that task, which Lighthouse counts as blocking (issue 27, TBT). It says where this tab
    // is once its stream is open, so it misses nothing of the first screen.
    await nextTask();
    if (disposed) return;
    presence = new TreePresence(
      {
        bus: app.bus,
        api: app.api,
        treeId: tree._id,
        userId,
        activeId: () => shown.activeId,
        editing: () => shown.editorText() !== null,
        cardElement: (id) => shown.cardElement(id),
      },
      bar.presence,
    );
    presence.start();
    await drawn;
    if (disposed) return;
    // The copy kept for opening offline is written once the writer pauses and the page has
    // nothing else to do (src/web/idle.ts).
    if (fromDevice === null) {
      whenWriterPauses(() => {
        if (!disposed) void shown.keepCopy();
      });
    } else {
      const when = new Date(fromDevice).toLocaleString();
      notify(`Offline: this tree as this device last saw it (${when}). Your changes are kept here and sent when the server is back.`, {
        timeout: 8000,
      });
    }
  };

  /** The tree as this device kept it, when the server cannot be reached. */
  const fromDevice = async (error: unknown, fetching: TreeFetch): Promise<boolean> => {
    const unreachable = error instanceof NetworkError || (error instanceof ApiError && error.transient);
    if (!unreachable || !device) return false;
    const copy = await fetching.deviceCopy(device).catch(() => null);
    if (!copy || disposed) return false;
    await open(copy.tree, copy.cards, copy.savedAt);
    return true;
  };

  const load = async () => {
    const progress = showProgress("Opening the tree", "Loading the cards");
    // Beside the requests; `open` waits for it (and says if it failed).
    loadMarkdown().catch(() => undefined);
    try {
      // The tree list and the cards at once, the cards of the tree record's revision (asked
      // for again when they were not: model/tree-fetch.ts), so no change falls between the
      // revision the live stream resumes after and the cards.
      let trees: Tree[];
      let cards: IndexedCards;
      // Fetched and parsed off the page's thread, arriving in slices (model/card-loader.ts).
      const fetching = started ?? fetchTree(app.api, treeId);
      started = null;
      try {
        trees = await fetching.trees;
        cards = await fetching.cards((loaded, total) => {
          progress.step(total === null ? `Loading the cards: ${formatCount(loaded)}` : `Loading the cards: ${formatCount(loaded)} of ${formatCount(total)}`);
          progress.fraction(total === null || total === 0 ? null : Math.min(1, loaded / total));
        });
      } catch (error) {
        fetching.cancel();
        if (await fromDevice(error, fetching)) return;
        throw error;
      }
      rememberTrees(app, trees);
      void device?.saveTreeList(trees).catch(() => undefined);
      const tree = trees.find((t) => t._id === treeId);
      if (disposed) return;
      if (!tree) throw new ApiError(404, "not_found", "");
      // Parsing the answer was one task; drawing is the next, after the browser had a turn.
      progress.step(`Drawing ${formatCount(cards.length)} cards`);
      await nextTask();
      if (disposed) return;
      await open(tree, cards, null);
    } catch (error) {
      if (disposed) return;
      const missing = error instanceof ApiError && (error.status === 404 || error.status === 400);
      // Changes to it waiting on this device can never go now: their words are kept apart.
      const gone = "This tree doesn't exist, or it hasn't been shared with you.";
      const kept = missing && device && userId !== "" ? await keepWordsOfLostTree(device, userId, treeId, gone, (keep) => keepDraftsOfGoneTree(treeId, keep)).catch(() => 0) : 0;
      if (disposed) return;
      const keptNote = kept === 0 ? "" : ` ${kept === 1 ? "The text you wrote" : `The ${kept} texts you wrote`} in it that had not reached the server ${kept === 1 ? "is" : "are"} kept in this browser: your trees page lists ${kept === 1 ? "it" : "them"} under “Words not saved”.`;
      main.replaceChildren(
        pageMessage(
          missing ? gone + keptNote : describeError(error),
          missing
            ? h("a", { class: "button", href: "/", "data-nav": true }, "Back to your trees")
            : h("button", { type: "button", class: "button", onclick: () => void load() }, "Try again"),
        ),
      );
    } finally {
      progress.close();
    }
  };
  void load();

  return () => {
    disposed = true;
    window.removeEventListener("beforeunload", warnBeforeClose);
    window.removeEventListener("pagehide", keepCopy);
    controller?.stop();
    undo?.stop();
    presence?.stop();
    if (app.openTree === controller) app.openTree = null;
  };
}

/** The first key of `event` now, in words (a tooltip's), or none. */
function shortcutWords(event: EventName): string | undefined {
  const combo = bindingsFor(event)[0];
  return combo === undefined ? undefined : describeCombo(combo);
}

/** Title and toolbar; `editable` adds the buttons that change the tree. */
export function fillBar(app: AppContext, bar: TopBar, tree: Tree, editable: boolean): void {
  const { bus } = app;
  const title = h(
    editable ? "button" : "span",
    editable
      ? { type: "button", class: "tree-title", title: "Tree settings: name and math", onclick: () => bus.trigger("modal:show:rename-tree", tree._id) }
      : { class: "tree-title" },
    tree.name,
  );
  bar.title.replaceChildren(h("h1", { class: "tree-heading" }, title));
  document.title = `${tree.name} · Cardtree`;
  bar.actions.replaceChildren();
  append(
    bar.actions,
    editable ? barButton("Import", () => bus.trigger("modal:show:import")) : null,
    barButton("Export", () => bus.trigger("modal:show:export")),
    editable ? barButton("Share", () => bus.trigger("modal:show:collaborators", tree._id)) : null,
    editable ? barButton("Undo", () => bus.trigger("key:undo"), { shortcut: "Ctrl+Z" }) : null,
    editable ? barButton("Redo", () => bus.trigger("key:redo"), { shortcut: "Ctrl+Shift+Z" }) : null,
    editable ? barButton("History", () => bus.trigger("modal:show:history"), { shortcut: shortcutWords("modal:show:history") }) : null,
    barButton("Help", () => bus.trigger("modal:show:help"), { shortcut: shortcutWords("modal:show:help") }),
  );
}

function listen(app: AppContext, controller: TreeController, main: HTMLElement, context: object): void {
  const { bus } = app;
  const treeId = controller.tree._id;
  const active = () => {
    const card = controller.activeCard();
    return card ? { id: card._id, content: card.content, depth: controller.cards.depth(card._id) } : null;
  };
  bus.on("modal:show:import", () => withPart(() => import("../dialogs/import.js"), ({ showImportDialog }) => showImportDialog(bus, active())), context);
  acceptFileDrops(main, "Drop files to import them under the active card", (files) => void importFiles(bus, files, active()?.id ?? null));
  bus.on("modal:show:export", () => withPart(() => import("../dialogs/export.js"), ({ showExportDialog }) => showExportDialog(bus, treeId, active())), context);
  bus.on(
    "modal:show:history",
    () =>
      withPart(
        () => import("../history/panel.js"),
        ({ showHistoryPanel }) =>
          showHistoryPanel({
            bus,
            api: app.api,
            userId: app.session.user?._id ?? null,
            target: {
              tree: controller.tree,
              activeCard: () => controller.activeCard(),
              applyContent: (card, text) => controller.applyContent(card, text),
              applyServerChange: (change) => controller.applyServerChange(change),
              cardIds: () => controller.cards.treeOrder().map((entry) => entry.card._id),
            },
          }),
      ),
    context,
  );
  bus.on(
    "cards:import",
    async ({ parentId, seed, at, kind, done }) => {
      const progress = showProgress(kind === "paste" ? "Pasting" : "Importing", `${formatBytes(seed.length)} to send`);
      try {
        // Kept in the outbox first, sent after the changes before it (its parent may be new).
        const parent = parentId === null ? null : controller.currentId(parentId);
        const sent = controller.importSeed({ parentId: parent, text: seed, at, kind: kind === "paste" ? "paste" : "import" });
        await controller.stored();
        if (!navigator.onLine) {
          done?.(null);
          notify(`Offline: the ${kind === "paste" ? "paste" : "import"} is kept on this device and made when the server is back.`, { timeout: 6000 });
          void sent.catch(() => undefined);
          return;
        }
        progress.step(`Sending ${formatBytes(seed.length)}; the server makes the cards`);
        // The cards are shown by the controller when the server made them (SyncHooks.imported).
        await sent;
        done?.(null);
      } catch (error) {
        done?.(describeError(error));
      } finally {
        progress.close();
      }
    },
    context,
  );
  bus.on(
    "tree:changed",
    (tree) => {
      if (tree._id !== treeId) return;
      controller.renamed(tree);
      const bar = document.querySelector(".topbar-title .tree-title");
      if (bar) bar.textContent = tree.name;
      document.title = `${tree.name} · Cardtree`;
    },
    context,
  );
  bus.on("tree:deleted", (id) => id === treeId && bus.trigger("ui:navigate", "/"), context);
  // Dialogs opened by tree id (rename, share) show the tree's name.
  if (!app.trees.has(treeId)) rememberTrees(app, [controller.tree]);
}

/** Imports dropped files one after another under `parentId`, each with the import's progress. */
async function importFiles(bus: AppContext["bus"], files: File[], parentId: string | null): Promise<void> {
  for (const file of files) {
    try {
      const { seed } = await readImportFile(file);
      const problem = await new Promise<string | null>((done) => bus.trigger("cards:import", { parentId, seed, done }));
      if (problem) notify(`Couldn't import “${file.name}”: ${problem}`, { kind: "error" });
    } catch (error) {
      notify(importProblem(file, error, describeError), { kind: "error" });
    }
  }
}

/**
 * A change the server refused for good. Its words, if it carried any, are kept on the device
 * (offline/unsaved-words.ts) and listed on the trees page, and the message names the card,
 * so that two refusals are two messages, each with its own text to copy.
 */
function refused(
  controller: TreeController,
  userId: string,
  kind: "create" | "update" | "delete" | "import",
  card: Card | null,
  error: ApiError,
  text: string | null,
): void {
  const titled = text ? ` “${titleOf(text)}”` : "";
  const what = kind === "create" ? `add the card${titled}` : kind === "update" ? `save the card${titled}` : kind === "import" ? "import cards" : "delete a card";
  const why = isTreeGone(error)
    ? "this tree was deleted, or is no longer shared with you."
    : error.status === 404
      ? "it was deleted meanwhile, perhaps by a collaborator."
      : error.message;
  const message = `Couldn't ${what}: ${why}`;
  if (kind === "create" && card) controller.dropRefused(card);
  if (!text || text.trim() === "") {
    notify(message, { kind: "error" });
    return;
  }
  const kept = userId !== "" && keepUnsavedWords(userId, { treeId: controller.tree._id, treeName: controller.tree.name, text, reason: message });
  notifyWithText(kept ? `${message} ${KEPT_NOTE}` : `${message} Copy your text now: this browser could not keep it.`, text);
}

/** What the message of words kept on the device adds. */
const KEPT_NOTE = "Your text is kept in this browser: your trees page lists it under “Words not saved”.";

