/**
 * One card's element, `#card<id>`: its rendered Markdown, or its editor while editing.
 * Rendering is skipped when the content has not changed since the last render, so redrawing
 * the columns after a move costs little.
 */
import type { Card } from "../../domain/records.js";
import { h } from "../dom.js";
import { renderMarkdown } from "../markdown.js";

const renderedContent = new WeakMap<HTMLElement, string>();

export function createCardElement(card: Card, readOnly: boolean): HTMLElement {
  const element = h("article", {
    id: `card${card._id}`,
    class: "card",
    "data-id": card._id,
    tabindex: -1,
    role: "treeitem",
    draggable: readOnly ? null : "true",
  });
  element.append(h("div", { class: "card-content markdown" }));
  renderCardContent(element, card);
  return element;
}

export function renderCardContent(element: HTMLElement, card: Card): void {
  if (renderedContent.get(element) === card.content) return;
  const body = element.querySelector<HTMLElement>(".card-content");
  if (!body) return;
  body.innerHTML = renderMarkdown(card.content);
  // Text that renders to nothing visible (say, only a <script> the sanitizer removed) is
  // shown as written, so the card can still be found and fixed.
  const invisible = body.textContent?.trim() === "" && !body.querySelector("img, hr, table, input");
  if (invisible && card.content.trim() !== "") {
    body.textContent = card.content;
    body.classList.add("card-raw");
  } else {
    body.classList.remove("card-raw");
  }
  element.classList.toggle("card-empty", card.content.trim() === "");
  renderedContent.set(element, card.content);
}

/** The card's id changed (a locally created card was saved): keep the element, rename it. */
export function renameCardElement(element: HTMLElement, newId: string): void {
  element.id = `card${newId}`;
  element.dataset.id = newId;
}
