/**
 * One card's element, `#card<id>`: its rendered Markdown in `.view`, and the card's one
 * `textarea.mousetrap`, hidden until the card is edited (Gingko's page structure, SPEC §8;
 * docs/scripting.md "The page structure"). The textarea is made with the element and kept
 * with it: every edit of the card reuses it, so a script that wrapped it in its own editor
 * finds its wrapper again. A read-only page (a public tree) has no textarea.
 * Rendering is skipped when the content has not changed since the last render, so redrawing
 * the columns after a move costs little, and so HTML a user script wrote into `.view` stays
 * until the card's text changes (a save redraws `.view` before it announces `card:save`, so a
 * script rewriting it there has the last word). In a large tree a card may start "deferred": its
 * text shown plain until it is rendered (see views/deferred-render.ts), since rendering and
 * sanitizing thousands of cards up front would keep the writer waiting.
 *
 * After rendering, the card's HTML is made fit for a column: wide tables and code scroll
 * inside the card (and can be reached by keyboard to do so), task-list checkboxes are named
 * after their item and clickable where the tree can be written, and, in a tree with `latex`,
 * formulas become MathML (math.ts).
 */
import type { Card } from "../../shared/records.js";
import { h } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { extractMath, insertMath, loadMath } from "../math.js";
import { placeRemoteImages, type RemoteImages } from "../remote-images.js";

export interface CardRendering {
  readOnly: boolean;
  latex: boolean;
  /** What to do with images from other hosts (remote-images.ts). */
  remoteImages: RemoteImages;
}

const renderedContent = new WeakMap<HTMLElement, string>();
const deferred = new WeakSet<HTMLElement>();

export function createCardElement(card: Card, rendering: CardRendering, defer = false): HTMLElement {
  const element = h("div", {
    id: `card${card._id}`,
    class: "card",
    "data-id": card._id,
    tabindex: -1,
    role: "treeitem",
    "aria-selected": "false",
    draggable: rendering.readOnly ? null : "true",
  });
  element.append(h("div", { class: "view card-content markdown" }));
  if (!rendering.readOnly) {
    element.append(
      h("textarea", {
        class: "mousetrap card-editor",
        "aria-label": "Card text (Markdown). Ctrl+Enter saves, Escape cancels.",
        spellcheck: "true",
      }),
    );
  }
  if (defer) deferred.add(element);
  renderCardContent(element, card, rendering);
  return element;
}

/**
 * Renders the card's Markdown now, kept by the renderer (markdown-render.ts caches by text),
 * so that drawing the card later only puts the HTML in place.
 */
export function prepareCardContent(card: Card, rendering: CardRendering): void {
  renderMarkdown(rendering.latex ? extractMath(card.content).text : card.content, rendering.remoteImages);
}

/** The card's one textarea (null on a read-only page). */
export function cardTextarea(element: HTMLElement): HTMLTextAreaElement | null {
  return element.querySelector<HTMLTextAreaElement>(":scope > textarea.card-editor");
}

export function isDeferred(element: HTMLElement): boolean {
  return deferred.has(element);
}

/** Renders a deferred card's Markdown now. */
export function renderDeferred(element: HTMLElement, card: Card, rendering: CardRendering): void {
  if (!deferred.delete(element)) return;
  renderedContent.delete(element);
  renderCardContent(element, card, rendering);
}

export function renderCardContent(element: HTMLElement, card: Card, rendering: CardRendering): void {
  const key = `${rendering.latex ? "L" : "-"}${rendering.readOnly ? "R" : "-"}${rendering.remoteImages[0]}${card.content}`;
  if (renderedContent.get(element) === key) return;
  const body = element.querySelector<HTMLElement>(":scope > .view");
  if (!body) return;
  // Between edits the textarea holds the card's text; during an edit it is the writer's.
  const textarea = cardTextarea(element);
  if (textarea && !element.classList.contains("editing") && textarea.value !== card.content) textarea.value = card.content;
  element.classList.toggle("card-empty", card.content.trim() === "");
  if (deferred.has(element)) {
    // Plain text (never HTML) keeps the card's height close to its rendered one.
    body.textContent = card.content;
    renderedContent.set(element, key);
    return;
  }
  const { text, formulas } = rendering.latex ? extractMath(card.content) : { text: card.content, formulas: [] };
  body.innerHTML = renderMarkdown(text, rendering.remoteImages);
  // Text that renders to nothing visible (say, only a <script> the sanitizer removed) is
  // shown as written, so the card can still be found and fixed.
  const invisible = body.textContent?.trim() === "" && !body.querySelector("img, hr, table, input");
  if (invisible && card.content.trim() !== "") {
    body.textContent = card.content;
    body.classList.add("card-raw");
  } else {
    body.classList.remove("card-raw");
    const complete = insertMath(body, formulas);
    placeRemoteImages(body, rendering.remoteImages);
    fitForColumn(body, rendering.readOnly);
    if (!complete) {
      // Formulas show as written until the math part is loaded, then the card is drawn again
      // (unless it was drawn meanwhile with other text).
      void loadMath().then(
        () => {
          if (renderedContent.get(element) !== key) return;
          renderedContent.delete(element);
          renderCardContent(element, card, rendering);
        },
        () => undefined,
      );
    }
  }
  renderedContent.set(element, key);
}

/** The card's id changed (a locally created card was saved): keep the element, rename it. */
export function renameCardElement(element: HTMLElement, newId: string): void {
  element.id = `card${newId}`;
  element.dataset.id = newId;
}

function fitForColumn(body: HTMLElement, readOnly: boolean): void {
  for (const table of body.querySelectorAll("table")) {
    const scroller = h("div", { class: "table-scroll", tabindex: 0, role: "region", "aria-label": "Table" });
    table.replaceWith(scroller);
    scroller.append(table);
  }
  for (const pre of body.querySelectorAll("pre")) pre.tabIndex = 0;
  body.querySelectorAll<HTMLInputElement>("input[type=checkbox]").forEach((box, index) => {
    box.dataset.task = String(index);
    box.disabled = readOnly;
    const item = box.closest("li")?.textContent?.trim() ?? "";
    box.setAttribute("aria-label", item === "" ? `Task ${index + 1}` : item.slice(0, 80));
  });
}
