/**
 * The keyboard, bound with Mousetrap (published as `window.Mousetrap` for user scripts),
 * from the table of shared/shortcuts.ts with the user's own keys over it.
 * Each binding only turns a key into a bus event (`key:down`, `key:save`, …) in the scope
 * where the key means that; the app's reaction lives with the listeners. A key the current
 * scope does not use is left to the browser, so typing in the editor is never swallowed.
 */
import Mousetrap from "mousetrap";
import type { AppBus } from "./bus.js";
import type { AppContext } from "./context.js";
import type { ActionEvent, EventName } from "./events.js";
import { modalOpen, type KeyScope, type KeyScopeName } from "./scope.js";
import { effectiveShortcuts, type KeyBindings, type Shortcut } from "../shared/shortcuts.js";

/**
 * The shortcuts as they are now: the defaults (shared/shortcuts.ts), with the signed-in user's
 * own keys over them (their preferences, set on the settings page).
 */
let current: Shortcut[] = effectiveShortcuts();

/** The keys of `event` now, as the help overlay and the settings page list them. */
export function bindingsFor(event: EventName): string[] {
  return [...(current.find((shortcut) => shortcut.event === event)?.keys ?? [])];
}

/** Every action with its keys now. */
export function currentShortcuts(): readonly Shortcut[] {
  return current;
}

/** The keys Mousetrap has from us (a user script's own bindings are left alone). */
let bound: string[] = [];

/** Binds the keys again from the signed-in user's preferences (a tree page calls it as it opens). */
export let refreshShortcuts: () => void = () => undefined;

export function installKeyboard({ bus, keys, preferences }: Pick<AppContext, "bus" | "keys" | "preferences">): void {
  refreshShortcuts = () => bindAll(bus, keys, preferences.read().keys);
  refreshShortcuts();
  bus.on("preferences:change", (next) => bindAll(bus, keys, next.keys));
  // Ctrl+S is Save in the editor (key:save); anywhere else on a tree page the browser's own
  // "save page" would otherwise run.
  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "s" && onTreePage()) event.preventDefault();
  });
  installClipboard(bus, keys);
  // The quick switcher (issue 30), on any page of a signed-in user, so not in bindAll's tree
  // scope, and from a text field too (the trees list's search box): Ctrl+O means nothing to
  // text, and Mousetrap, which leaves keys in text fields alone, would let the browser's
  // "open file" run there. While a card is being edited, or in a dialog, the key only keeps
  // "open file" away (the editor's text would be left behind).
  document.addEventListener("keydown", (event) => {
    if (!(event.ctrlKey || event.metaKey) || event.altKey || event.shiftKey || event.key.toLowerCase() !== "o") return;
    event.preventDefault();
    if (!modalOpen() && !(onTreePage() && keys.current === "editCard")) bus.trigger("modal:show:switcher");
  });
}

/** (Re)binds every shortcut with `own` keys over the defaults. */
function bindAll(bus: AppBus, keys: KeyScope, own: KeyBindings): void {
  current = effectiveShortcuts(own);
  for (const key of bound) Mousetrap.unbind(key);
  // Bindings of one key in several scopes share one Mousetrap callback (a second bind
  // would replace the first).
  const byKey = new Map<string, Shortcut[]>();
  for (const shortcut of current) {
    if (shortcut.fixed) continue;
    for (const key of shortcut.keys) byKey.set(key, [...(byKey.get(key) ?? []), shortcut]);
  }
  bound = [...byKey.keys()];
  for (const [key, shortcuts] of byKey) {
    Mousetrap.bind(key, (event) => {
      if (!onTreePage() || modalOpen()) return;
      const scope = keys.current;
      const shortcut = shortcuts.find((s) => s.scopes.includes(scope));
      if (!shortcut || ownedByControl(event, key, scope)) return;
      bus.trigger(shortcut.event as ActionEvent);
      return false;
    });
  }
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
