/**
 * One card's element, `#card<id>`: its rendered Markdown, or its editor while editing.
 * Rendering is skipped when the content has not changed since the last render, so redrawing
 * the columns after a move costs little. In a large tree a card may start "deferred": its
 * text shown plain until it is rendered (see views/deferred-render.ts), since rendering and
 * sanitizing thousands of cards up front would keep the writer waiting.
 */
import type { Card } from "../../domain/records.js";
import { h } from "../dom.js";
import { renderMarkdown } from "../markdown.js";

const renderedContent = new WeakMap<HTMLElement, string>();
const deferred = new WeakSet<HTMLElement>();

export function createCardElement(card: Card, readOnly: boolean, defer = false): HTMLElement {
  const element = h("article", {
    id: `card${card._id}`,
    class: "card",
    "data-id": card._id,
    tabindex: -1,
    role: "treeitem",
    "aria-selected": "false",
    draggable: readOnly ? null : "true",
  });
  element.append(h("div", { class: "card-content markdown" }));
  if (defer) deferred.add(element);
  renderCardContent(element, card);
  return element;
}

export function isDeferred(element: HTMLElement): boolean {
  return deferred.has(element);
}

/** Renders a deferred card's Markdown now. */
export function renderDeferred(element: HTMLElement, card: Card): void {
  if (!deferred.delete(element)) return;
  renderedContent.delete(element);
  renderCardContent(element, card);
}

export function renderCardContent(element: HTMLElement, card: Card): void {
  if (renderedContent.get(element) === card.content) return;
  const body = element.querySelector<HTMLElement>(".card-content");
  if (!body) return;
  if (deferred.has(element)) {
    // Plain text (never HTML) keeps the card's height close to its rendered one.
    body.textContent = card.content;
    renderedContent.set(element, card.content);
    return;
  }
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
