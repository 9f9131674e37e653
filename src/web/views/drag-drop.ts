/**
 * Drag and drop of cards in the columns: drop on the top half of a card to go before it, the
 * bottom half to go after it, its right edge to become its last child. The drop only
 * triggers `ui:move`; the controller decides (and refuses a drop into the card's own subtree).
 */
import type { AppBus } from "../bus.js";

const MIME = "application/x-cardtree-card";
const ZONES = ["drop-before", "drop-after", "drop-child"] as const;

export function installDragAndDrop(bus: AppBus, columns: HTMLElement): void {
  let draggedId: string | null = null;
  let marked: HTMLElement | null = null;

  const unmark = () => {
    marked?.classList.remove(...ZONES);
    marked = null;
  };
  const cardAt = (event: Event) => (event.target as Element | null)?.closest?.<HTMLElement>(".card") ?? null;
  const zoneOf = (card: HTMLElement, event: DragEvent): "before" | "after" | "child" => {
    const box = card.getBoundingClientRect();
    if (event.clientX > box.left + box.width * 0.75) return "child";
    return event.clientY < box.top + box.height / 2 ? "before" : "after";
  };

  columns.addEventListener("dragstart", (event) => {
    const card = cardAt(event);
    if (!card || card.classList.contains("editing") || !event.dataTransfer) {
      event.preventDefault();
      return;
    }
    draggedId = card.dataset.id ?? null;
    event.dataTransfer.setData(MIME, draggedId ?? "");
    event.dataTransfer.effectAllowed = "move";
    card.classList.add("dragging");
  });

  columns.addEventListener("dragover", (event) => {
    const card = cardAt(event);
    if (!draggedId || !card || card.dataset.id === draggedId) return unmark();
    event.preventDefault();
    if (event.dataTransfer) event.dataTransfer.dropEffect = "move";
    if (marked !== card) unmark();
    marked = card;
    const zone = `drop-${zoneOf(card, event)}`;
    for (const name of ZONES) card.classList.toggle(name, name === zone);
  });

  columns.addEventListener("dragleave", (event) => {
    if (marked && !marked.contains(event.relatedTarget as Node | null)) unmark();
  });

  columns.addEventListener("drop", (event) => {
    const card = cardAt(event);
    const id = draggedId;
    unmark();
    if (!id || !card?.dataset.id || card.dataset.id === id) return;
    event.preventDefault();
    bus.trigger("ui:move", { id, targetId: card.dataset.id, where: zoneOf(card, event) });
  });

  columns.addEventListener("dragend", () => {
    unmark();
    columns.querySelector(".dragging")?.classList.remove("dragging");
    draggedId = null;
  });
}
