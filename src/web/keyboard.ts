/**
 * The keyboard, bound with Mousetrap (published as `window.Mousetrap` for user scripts).
 * Each binding only turns a key into a bus event (`key:down`, `key:save`, …) in the scope
 * where the key means that; the app's reaction lives with the listeners. A key the current
 * scope does not use is left to the browser, so typing in the editor is never swallowed.
 */
import Mousetrap from "mousetrap";
import type { AppBus } from "./bus.js";
import type { AppContext } from "./context.js";
import type { ActionEvent, EventName } from "./events.js";
import { modalOpen, type KeyScope, type KeyScopeName } from "./scope.js";

interface Binding {
  keys: string[];
  event: ActionEvent;
  scopes: KeyScopeName[];
}

const BINDINGS: Binding[] = [
  { keys: ["up"], event: "key:up", scopes: ["tree"] },
  { keys: ["down"], event: "key:down", scopes: ["tree"] },
  { keys: ["left"], event: "key:left", scopes: ["tree"] },
  { keys: ["right"], event: "key:right", scopes: ["tree"] },
  { keys: ["home"], event: "key:first", scopes: ["tree"] },
  { keys: ["end"], event: "key:last", scopes: ["tree"] },
  { keys: ["pageup"], event: "key:pageUp", scopes: ["tree"] },
  { keys: ["pagedown"], event: "key:pageDown", scopes: ["tree"] },
  { keys: ["enter"], event: "key:edit", scopes: ["tree"] },
  { keys: ["shift+enter", "ctrl+shift+f"], event: "key:editFullscreen", scopes: ["tree"] },
  { keys: ["ctrl+shift+f"], event: "key:fullscreen", scopes: ["editCard"] },
  { keys: ["ctrl+enter", "command+enter"], event: "key:save", scopes: ["editCard"] },
  { keys: ["escape"], event: "key:cancel", scopes: ["editCard"] },
  { keys: ["ctrl+b", "command+b"], event: "key:bold", scopes: ["editCard"] },
  { keys: ["ctrl+i", "command+i"], event: "key:italic", scopes: ["editCard"] },
  { keys: ["ctrl+down", "command+down"], event: "key:addDown", scopes: ["tree", "editCard"] },
  { keys: ["ctrl+up", "command+up"], event: "key:addUp", scopes: ["tree", "editCard"] },
  { keys: ["ctrl+right", "command+right"], event: "key:addRight", scopes: ["tree", "editCard"] },
  { keys: ["alt+up"], event: "key:moveUp", scopes: ["tree"] },
  { keys: ["alt+down"], event: "key:moveDown", scopes: ["tree"] },
  { keys: ["alt+left"], event: "key:moveLeft", scopes: ["tree"] },
  { keys: ["alt+right"], event: "key:moveRight", scopes: ["tree"] },
  { keys: ["ctrl+backspace", "command+backspace"], event: "key:delete", scopes: ["tree"] },
  { keys: ["ctrl+j", "command+j"], event: "key:split:down", scopes: ["editCard"] },
  { keys: ["ctrl+k", "command+k"], event: "key:split:up", scopes: ["editCard"] },
  { keys: ["ctrl+l", "command+l"], event: "key:split:right", scopes: ["editCard"] },
  { keys: ["ctrl+shift+down", "command+shift+down"], event: "key:merge:down", scopes: ["tree", "editCard"] },
  { keys: ["ctrl+shift+up", "command+shift+up"], event: "key:merge:up", scopes: ["tree", "editCard"] },
  { keys: ["/"], event: "key:search", scopes: ["tree"] },
  { keys: ["ctrl+shift+w"], event: "key:wordcount", scopes: ["tree", "editCard"] },
  { keys: ["?"], event: "modal:show:help", scopes: ["tree"] },
  // Only while navigating: in the editor the browser's own text undo keeps these keys.
  { keys: ["ctrl+z", "command+z"], event: "key:undo", scopes: ["tree"] },
  { keys: ["ctrl+shift+z", "command+shift+z", "ctrl+y"], event: "key:redo", scopes: ["tree"] },
  { keys: ["h"], event: "modal:show:history", scopes: ["tree"] },
  // Bound on every page, not only a tree's (installKeyboard): listed here for the help.
  { keys: ["ctrl+o", "command+o"], event: "modal:show:switcher", scopes: ["tree"] },
];

/**
 * Shortcuts the browser turns into clipboard events (listed for the help; see
 * installClipboard): the app acts on the events, so it gets the clipboard's contents.
 */
export const CLIPBOARD_KEYS: Partial<Record<EventName, string[]>> = {
  "key:copy": ["ctrl+c"],
  "key:cut": ["ctrl+x"],
  "key:paste": ["ctrl+v"],
  "key:paste:child": ["ctrl+shift+v"],
};

/** The shortcuts, grouped by event, as the help overlay lists them. */
export function bindingsFor(event: EventName): string[] {
  return [...new Set([...BINDINGS.filter((b) => b.event === event).flatMap((b) => b.keys), ...(CLIPBOARD_KEYS[event] ?? [])])];
}

export function installKeyboard({ bus, keys }: Pick<AppContext, "bus" | "keys">): void {
  // Bindings of one key in several scopes share one Mousetrap callback (a second bind
  // would replace the first).
  const byKey = new Map<string, Binding[]>();
  for (const binding of BINDINGS) {
    for (const key of binding.keys) byKey.set(key, [...(byKey.get(key) ?? []), binding]);
  }
  for (const [key, bindings] of byKey) {
    Mousetrap.bind(key, (event) => {
      if (!onTreePage() || modalOpen()) return;
      const scope = keys.current;
      const binding = bindings.find((b) => b.scopes.includes(scope));
      if (!binding || ownedByControl(event, key, scope)) return;
      bus.trigger(binding.event);
      return false;
    });
  }
  // The quick switcher, on any page of a logged-in user; while a card is being edited the key
  // only keeps the browser's "open file" away (the editor's text would be left behind).
  Mousetrap.bind(["ctrl+o", "command+o"], () => {
    if (!modalOpen() && !(onTreePage() && keys.current === "editCard")) bus.trigger("modal:show:switcher");
    return false;
  });
  installClipboard(bus, keys);
}

/**
 * Ctrl+C / Ctrl+X / Ctrl+V on the tree copy, cut and paste cards. They act on the browser's
 * clipboard events rather than on the keys, which is what gives them the system clipboard
 * (written and read in the event, no permission asked). Text fields and a text selection in
 * the page keep the browser's own copy and paste. Ctrl+Shift+V (which browsers send as a
 * paste too) pastes as a child.
 */
function installClipboard(bus: AppBus, keys: KeyScope): void {
  let asChild = false;
  Mousetrap.bind(["ctrl+shift+v", "command+shift+v"], () => {
    asChild = true;
    window.setTimeout(() => (asChild = false), 500);
  });
  const forTree = (event: ClipboardEvent) => {
    if (!onTreePage() || modalOpen() || keys.current !== "tree") return false;
    const target = event.target as HTMLElement | null;
    if (target?.matches?.("input, textarea, [contenteditable]")) return false;
    return true;
  };
  const selectingText = () => {
    const selection = window.getSelection();
    return selection !== null && !selection.isCollapsed && selection.toString().trim() !== "";
  };
  for (const kind of ["copy", "cut"] as const) {
    document.addEventListener(kind, (event) => {
      if (!forTree(event) || selectingText()) return;
      event.preventDefault();
      bus.trigger(`key:${kind}`, event.clipboardData);
    });
  }
  document.addEventListener("paste", (event) => {
    if (!forTree(event)) return;
    event.preventDefault();
    const text = event.clipboardData?.getData("text/plain") ?? null;
    bus.trigger(asChild ? "key:paste:child" : "key:paste", text);
    asChild = false;
  });
}

function onTreePage(): boolean {
  return document.querySelector(".columns") !== null;
}

/**
 * Whether the key belongs to the focused control rather than the tree: text fields other
 * than the card editor, and Enter on a button or link.
 */
function ownedByControl(event: KeyboardEvent, key: string, scope: KeyScopeName): boolean {
  const target = event.target as HTMLElement | null;
  if (!target || scope === "editCard") return false;
  if (target.matches("input, select, textarea:not(.mousetrap), [contenteditable]")) return true;
  return key === "enter" && target.matches("button, a[href], summary");
}
