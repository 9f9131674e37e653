/**
 * What the tree page and the public page share: the columns mounted in the page with their
 * mouse handling (click selects, double-click edits, drag moves), and the centred message
 * shown while loading or on failure.
 */
import type { AppContext } from "../context.js";
import type { OpenTree } from "../controller/tree-controller.js";
import { h } from "../dom.js";
import { installDragAndDrop } from "./drag-drop.js";
import { mountTools } from "./tree-tools.js";
import { touchBar } from "./touch-bar.js";

export function mountColumns(app: AppContext, main: HTMLElement, controller: OpenTree): void {
  const { bus } = app;
  const columns = controller.element;
  main.replaceChildren(columns);
  mountTools(bus, main, controller);
  main.append(touchBar(app, controller.readOnly));
  columns.addEventListener("click", (event) => {
    const target = event.target as Element;
    // Clicks inside the open editor place the caret; links open in a new tab by themselves.
    if (target.closest("textarea")) return;
    const card = target.closest<HTMLElement>(".card");
    if (card?.dataset.id) bus.trigger("ui:select", card.dataset.id);
    if (card?.dataset.id && target instanceof HTMLInputElement && target.dataset.task !== undefined) {
      bus.trigger("ui:task", card.dataset.id, Number(target.dataset.task), target.checked);
    }
  });
  columns.addEventListener("dblclick", (event) => {
    const target = event.target as Element;
    if (target.closest("textarea, a")) return;
    const card = target.closest<HTMLElement>(".card");
    if (card?.dataset.id && !controller.readOnly) bus.trigger("ui:edit", card.dataset.id);
  });
  if (!controller.readOnly) installDragAndDrop(bus, columns);
}

export function pageMessage(text: string, ...extra: (Node | null)[]): HTMLElement {
  return h("div", { class: "page-message-box" }, h("p", { class: "page-message" }, text), ...extra);
}
