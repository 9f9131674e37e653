/**
 * `/p/:publicUrl`: a public tree, read-only, with or without a log-in. Navigation, export
 * and help work; a logged-in reader can copy the tree into their own trees.
 */
import { api, ApiError, describeError } from "../api.js";
import { bus } from "../bus.js";
import { TreeController } from "../controller/tree-controller.js";
import { showExportDialog } from "../dialogs/export.js";
import { h, mount } from "../dom.js";
import { setScriptedTree } from "../scripting.js";
import { currentUser } from "../session.js";
import { topBar } from "./header.js";
import { fillBar } from "./tree-page.js";
import { mountColumns, pageMessage } from "./tree-frame.js";

export function renderPublicPage(root: HTMLElement, publicUrl: string, context: object): () => void {
  const bar = topBar();
  const main = h("main", { class: "tree-page tree-page-public" }, pageMessage("Opening the tree…"));
  mount(root, bar.element, main);
  let controller: TreeController | null = null;
  let disposed = false;

  const load = async () => {
    try {
      const { tree, cards } = await api.publicTree(publicUrl);
      if (disposed) return;
      controller = new TreeController(tree, cards, true, {
        status: () => undefined,
        refused: () => undefined,
        signedOut: () => undefined,
      });
      fillBar(bar, tree, false);
      bar.status.replaceChildren(h("span", { class: "badge badge-public" }, "Public · read-only"));
      if (currentUser()) {
        bar.actions.prepend(
          h(
            "button",
            { type: "button", class: "button button-quiet button-small", onclick: () => bus.trigger("trees:clone-public", { publicUrl }) },
            "Copy to my trees",
          ),
        );
      }
      mountColumns(main, controller);
      controller.start();
      setScriptedTree(controller);
      const active = () => {
        const card = controller?.state.get(controller.activeId);
        return card && controller ? { id: card._id, content: card.content, depth: controller.state.depth(card._id) } : null;
      };
      bus.on("modal:show:export", () => showExportDialog(tree._id, active()), context);
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
    setScriptedTree(null);
  };
}
