/**
 * The bar across the top of every page: the brand (a link home), a title slot, the save
 * status, page actions, and who is logged in.
 */
import type { AppContext } from "../context.js";
import { h } from "../dom.js";

export interface TopBar {
  element: HTMLElement;
  title: HTMLElement;
  status: HTMLElement;
  /** Who else has the open tree (live/presence.ts); empty on other pages. */
  presence: HTMLElement;
  actions: HTMLElement;
}

export function topBar(app: AppContext): TopBar {
  const { bus } = app;
  const title = h("div", { class: "topbar-title" });
  const status = h("div", { class: "topbar-status", role: "status", "aria-live": "polite" });
  const actions = h("nav", { class: "topbar-actions", "aria-label": "Page actions" });
  const presence = h("div", { class: "presence", id: "presence", hidden: true });
  const user = app.session.user;
  const element = h(
    "header",
    { class: "topbar" },
    h("a", { class: "brand", href: "/", "data-nav": true, "aria-label": "Cardtree: your trees" }, brandMark(), h("span", { class: "brand-name" }, "Cardtree")),
    title,
    status,
    presence,
    actions,
    h("button", { type: "button", class: "button button-quiet button-small appearance-button", title: "Appearance: theme and text size", onclick: () => bus.trigger("modal:show:appearance") }, "Appearance"),
    user
      ? h(
          "div",
          { class: "topbar-user" },
          h("span", { class: "user-email", title: user.email }, user.email),
          h("a", { class: "button button-quiet button-small", href: "/settings", "data-nav": true, title: "Settings: your password and your scripts" }, "Settings"),
          h("button", { type: "button", class: "button button-quiet button-small", title: `Log out ${user.email}`, onclick: () => bus.trigger("ui:logout") }, "Log out"),
        )
      : h("div", { class: "topbar-user" }, h("a", { class: "button button-quiet button-small", href: "/", "data-nav": true }, "Log in")),
  );
  return { element, title, status, presence, actions };
}

/** A toolbar button; `shortcut` is shown in its tooltip. */
export function barButton(label: string, run: () => void, options: { shortcut?: string; icon?: string } = {}): HTMLButtonElement {
  return h(
    "button",
    {
      type: "button",
      class: "button button-quiet button-small",
      title: options.shortcut ? `${label} (${options.shortcut})` : label,
      onclick: run,
    },
    options.icon ? h("span", { class: "button-icon", "aria-hidden": "true" }, options.icon) : null,
    label,
  );
}

/** The logo: cards stepping right, the shape of a tree in columns. */
export function brandMark(): SVGSVGElement {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", "brand-mark");
  svg.setAttribute("aria-hidden", "true");
  for (const [x, y, width, height] of [
    [1, 8, 6, 8],
    [9, 3, 6, 7],
    [9, 12, 6, 9],
    [17, 12, 6, 5],
  ]) {
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("x", String(x));
    rect.setAttribute("y", String(y));
    rect.setAttribute("width", String(width));
    rect.setAttribute("height", String(height));
    rect.setAttribute("rx", "1.3");
    svg.append(rect);
  }
  return svg;
}
