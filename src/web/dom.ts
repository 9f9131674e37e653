/**
 * A tiny element builder for the views. Text always goes in as text nodes, never as HTML:
 * the only HTML the app inserts is sanitized Markdown (markdown.ts), so user text cannot
 * become markup by accident.
 */

type Child = Node | string | number | false | null | undefined;

type Attributes = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") {
      element.addEventListener(name.replace(/^on/, ""), value);
    } else if (value === true) {
      element.setAttribute(name, "");
    } else {
      element.setAttribute(name, String(value));
    }
  }
  append(element, ...children);
  return element;
}

/** Appends children, skipping empty ones (false, null, undefined). */
export function append(parent: Node, ...children: (Child | Child[])[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(parent, ...child);
    else if (child instanceof Node) parent.appendChild(child);
    else if (child !== false && child !== null && child !== undefined) parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces everything inside `parent`. */
export function mount(parent: Element, ...children: (Child | Child[])[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** Writes an attribute only when it changes: an unchanged write still costs a style check. */
export function setAttribute(element: Element, name: string, value: string | null): void {
  if (element.getAttribute(name) === value) return;
  if (value === null) element.removeAttribute(name);
  else element.setAttribute(name, value);
}

/**
 * Makes `parent`'s children exactly `wanted`, in order, moving only what is out of place:
 * one card moved means one element moved, not a column rebuilt.
 */
export function syncChildren(parent: Element, wanted: Element[]): void {
  for (let i = 0; i < wanted.length; i++) {
    const current = parent.children[i];
    if (current !== wanted[i]) parent.insertBefore(wanted[i], current ?? null);
  }
  while (parent.children.length > wanted.length) parent.lastElementChild!.remove();
}

/** Hands `blob` to the browser as a download named `name` (its object URL let go a minute later). */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const save = Object.assign(document.createElement("a"), { href: url, download: name });
  document.body.append(save);
  save.click();
  save.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
