/**
 * `/p/:publicUrl`: a public tree, read-only, with or without a log-in. Navigation, export
 * and help work; a logged-in reader can copy the tree into their own trees.
 */
import { ApiError, describeError } from "../api.js";
import type { AppContext } from "../context.js";
import { TreeController } from "../controller/tree-controller.js";
import { withPart } from "../lazy.js";
import { markdownReady } from "../markdown.js";
import { h, mount } from "../dom.js";
import { topBar } from "./header.js";
import { fillBar } from "./tree-page.js";
import { mountColumns, pageMessage } from "./tree-frame.js";

export function renderPublicPage(app: AppContext, root: HTMLElement, publicUrl: string, context: object): () => void {
  const { bus } = app;
  const bar = topBar(app);
  const main = h("main", { class: "tree-page tree-page-public" }, pageMessage("Opening the tree…"));
  mount(root, bar.element, main);
  let controller: TreeController | null = null;
  let disposed = false;

  const load = async () => {
    try {
      // The cards' renderer (markdown.ts) loads beside the request.
      const [{ tree, cards }] = await Promise.all([app.api.publicTree(publicUrl), markdownReady()]);
      if (disposed) return;
      controller = new TreeController(app, tree, cards, true, {
        status: () => undefined,
        refused: () => undefined,
        signedOut: () => undefined,
      });
      fillBar(app, bar, tree, false);
      bar.status.replaceChildren(h("span", { class: "badge badge-public" }, "Public · read-only"));
      if (app.session.user) {
        bar.actions.prepend(
          h(
            "button",
            { type: "button", class: "button button-quiet button-small", onclick: () => bus.trigger("trees:clone-public", { publicUrl }) },
            "Copy to my trees",
          ),
        );
      }
      mountColumns(app, main, controller);
      const open = controller;
      await controller.prepare();
      if (disposed) return;
      void controller.start(() => (app.openTree = open));
      const active = () => {
        const card = open.activeCard();
        return card ? { id: card._id, content: card.content, depth: open.cards.depth(card._id) } : null;
      };
      bus.on("modal:show:export", () => withPart(() => import("../dialogs/export.js"), ({ showExportDialog }) => showExportDialog(bus, tree._id, active())), context);
    } catch (error) {
      if (disposed) return;
      const missing = error instanceof ApiError && error.status === 404;
      main.replaceChildren(
        pageMessage(
          missing ? "There is no public tree at this address. It may have been made private." : describeError(error),
          missing
            ? h("a", { class: "button", href: "/", "data-nav": true }, "Go to Cardtree")
            : h("button", { type: "button", class: "button", onclick: () => void load() }, "Try again"),
        ),
      );
    }
  };
  void load();

  return () => {
    disposed = true;
    controller?.stop();
    if (app.openTree === controller) app.openTree = null;
  };
}
