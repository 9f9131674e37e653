/**
 * The browser client's keyboard shortcuts (SPEC §8, issue 30): every action, the bus event it
 * triggers (`key:*`, unchanged whatever key a user binds to it: docs/scripting.md), the
 * scopes it works in, its default keys (Gingko Writer's, Cardtree's own beside them), and
 * its words in the `?` help. Shared by the browser (keyboard.ts binds from it, the help and
 * the settings page list it) and the server (a user's own keys, kept with their preferences,
 * are checked against it: `checkKeyBindings`), so neither can drift from the other.
 *
 * Keys are Mousetrap combos: modifiers (`ctrl`, `alt`, `shift`, `command`, in that order)
 * then one key, joined by `+` (`ctrl+shift+z`, `alt+pageup`, `?`).
 */

export type ShortcutScope = "tree" | "editCard";

export interface Shortcut {
  /** The bus event the keys trigger. */
  event: string;
  /** What the action does, as the help and the settings page say it. */
  label: string;
  section: "Moving around" | "Writing" | "Adding and arranging" | "Undo and history";
  scopes: readonly ShortcutScope[];
  keys: readonly string[];
  /**
   * Bound by the client itself, listed, never rebound: the browser's clipboard shortcuts
   * (acted on as clipboard events) and the quick switcher (Ctrl+O on every page).
   */
  fixed?: true;
}

export const SHORTCUTS: readonly Shortcut[] = [
  { event: "key:up", label: "Card above", section: "Moving around", scopes: ["tree"], keys: ["up", "k"] },
  { event: "key:down", label: "Card below", section: "Moving around", scopes: ["tree"], keys: ["down", "j"] },
  { event: "key:left", label: "Parent", section: "Moving around", scopes: ["tree"], keys: ["left", "h"] },
  { event: "key:right", label: "First child", section: "Moving around", scopes: ["tree"], keys: ["right", "l"] },
  { event: "key:first", label: "First card of the column", section: "Moving around", scopes: ["tree"], keys: ["home"] },
  { event: "key:last", label: "Last card of the column", section: "Moving around", scopes: ["tree"], keys: ["end"] },
  { event: "key:pageUp", label: "A screen up the column", section: "Moving around", scopes: ["tree"], keys: ["pageup"] },
  { event: "key:pageDown", label: "A screen down the column", section: "Moving around", scopes: ["tree"], keys: ["pagedown"] },
  { event: "key:search", label: "Search: show only matching cards", section: "Moving around", scopes: ["tree"], keys: ["/"] },
  { event: "key:wordcount", label: "Show or hide the word counts", section: "Moving around", scopes: ["tree"], keys: ["w", "ctrl+shift+w"] },

  { event: "key:edit", label: "Edit the active card", section: "Writing", scopes: ["tree"], keys: ["enter"] },
  { event: "key:save", label: "Save and stop editing", section: "Writing", scopes: ["editCard"], keys: ["ctrl+enter", "command+enter", "ctrl+s", "command+s"] },
  { event: "key:cancel", label: "Stop editing without saving", section: "Writing", scopes: ["editCard"], keys: ["escape"] },
  { event: "key:bold", label: "Bold (while editing)", section: "Writing", scopes: ["editCard"], keys: ["ctrl+b", "command+b"] },
  { event: "key:italic", label: "Italic (while editing)", section: "Writing", scopes: ["editCard"], keys: ["ctrl+i", "command+i"] },
  { event: "key:editFullscreen", label: "Write the active card in full screen", section: "Writing", scopes: ["tree"], keys: ["shift+enter", "ctrl+shift+f"] },
  { event: "key:fullscreen", label: "Full screen on or off (while editing)", section: "Writing", scopes: ["editCard"], keys: ["ctrl+shift+f"] },
  { event: "key:split:down", label: "Split at the caret: the rest to a new card below", section: "Writing", scopes: ["editCard"], keys: ["ctrl+j", "command+j"] },
  { event: "key:split:up", label: "Split at the caret: the text before to a new card above", section: "Writing", scopes: ["editCard"], keys: ["ctrl+k", "command+k"] },
  { event: "key:split:right", label: "Split at the caret: the rest to a new child", section: "Writing", scopes: ["editCard"], keys: ["ctrl+l", "command+l"] },

  { event: "key:addDown", label: "New card below", section: "Adding and arranging", scopes: ["tree", "editCard"], keys: ["ctrl+down", "command+down"] },
  { event: "key:addUp", label: "New card above", section: "Adding and arranging", scopes: ["tree", "editCard"], keys: ["ctrl+up", "command+up"] },
  { event: "key:addRight", label: "New child card", section: "Adding and arranging", scopes: ["tree", "editCard"], keys: ["ctrl+right", "command+right"] },
  { event: "key:moveUp", label: "Move card up", section: "Adding and arranging", scopes: ["tree"], keys: ["alt+up", "alt+k"] },
  { event: "key:moveDown", label: "Move card down", section: "Adding and arranging", scopes: ["tree"], keys: ["alt+down", "alt+j"] },
  { event: "key:moveLeft", label: "Move card left (out of its parent)", section: "Adding and arranging", scopes: ["tree"], keys: ["alt+left", "alt+h"] },
  { event: "key:moveRight", label: "Move card right (into the card above)", section: "Adding and arranging", scopes: ["tree"], keys: ["alt+right", "alt+l"] },
  { event: "key:moveUpFive", label: "Move card up by five", section: "Adding and arranging", scopes: ["tree"], keys: ["alt+shift+up"] },
  { event: "key:moveDownFive", label: "Move card down by five", section: "Adding and arranging", scopes: ["tree"], keys: ["alt+shift+down"] },
  { event: "key:moveToTop", label: "Move card to the top of its group", section: "Adding and arranging", scopes: ["tree"], keys: ["alt+pageup"] },
  { event: "key:moveToBottom", label: "Move card to the bottom of its group", section: "Adding and arranging", scopes: ["tree"], keys: ["alt+pagedown"] },
  { event: "key:delete", label: "Delete card (asks when it has children)", section: "Adding and arranging", scopes: ["tree"], keys: ["ctrl+backspace", "command+backspace"] },
  { event: "key:merge:down", label: "Merge with the card below", section: "Adding and arranging", scopes: ["tree", "editCard"], keys: ["ctrl+shift+down", "command+shift+down"] },
  { event: "key:merge:up", label: "Merge with the card above", section: "Adding and arranging", scopes: ["tree", "editCard"], keys: ["ctrl+shift+up", "command+shift+up"] },
  { event: "key:copy", label: "Copy the card and its subtree (also as Markdown)", section: "Adding and arranging", scopes: ["tree"], keys: ["ctrl+c"], fixed: true },
  { event: "key:cut", label: "Cut the card and its subtree", section: "Adding and arranging", scopes: ["tree"], keys: ["ctrl+x"], fixed: true },
  { event: "key:paste", label: "Paste below the active card", section: "Adding and arranging", scopes: ["tree"], keys: ["ctrl+v"], fixed: true },
  { event: "key:paste:child", label: "Paste as a child of the active card", section: "Adding and arranging", scopes: ["tree"], keys: ["ctrl+shift+v"], fixed: true },

  // Only while navigating: in the editor the browser's own text undo keeps these keys.
  { event: "key:undo", label: "Undo your last change in this tab (not while editing: there it undoes typing)", section: "Undo and history", scopes: ["tree"], keys: ["ctrl+z", "command+z"] },
  { event: "key:redo", label: "Redo what you undid", section: "Undo and history", scopes: ["tree"], keys: ["ctrl+shift+z", "command+shift+z", "ctrl+y"] },
  { event: "modal:show:history", label: "History: the tree's changes, the card's versions, the trash", section: "Undo and history", scopes: ["tree"], keys: ["shift+h"] },
  { event: "modal:show:help", label: "This help", section: "Undo and history", scopes: ["tree"], keys: ["?"] },
  { event: "modal:show:switcher", label: "Open another tree: type to filter, Enter opens (on every page)", section: "Undo and history", scopes: ["tree"], keys: ["ctrl+o", "command+o"], fixed: true },
];

/** The events a user may bind their own keys to. */
export const REBINDABLE_EVENTS: readonly string[] = SHORTCUTS.filter((s) => !s.fixed).map((s) => s.event);

/** At most this many keys per action. */
export const MAX_KEYS_PER_ACTION = 6;

/** A user's own keys: for each action they changed, its keys (none: the action has no key). */
export type KeyBindings = Record<string, string[]>;

const MODIFIERS = ["ctrl", "alt", "shift", "command"] as const;
const NAMED_KEYS = new Set([
  "up", "down", "left", "right", "home", "end", "pageup", "pagedown", "enter", "escape", "backspace", "del", "tab", "space", "ins",
  ...Array.from({ length: 12 }, (_, i) => `f${i + 1}`),
]);
const CHARACTER = /^[a-z0-9`\-=[\]\\;',./?]$/;

/**
 * The combo written the one way it is kept (modifiers in order, lower case), or null when it is
 * not one key with modifiers (a sequence, an unknown key name, a modifier twice).
 */
export function normalizeCombo(combo: string): string | null {
  const parts = combo.trim().toLowerCase().split("+");
  const key = parts.pop();
  if (key === undefined || key === "" || (!NAMED_KEYS.has(key) && !CHARACTER.test(key))) return null;
  const modifiers = new Set<string>();
  for (const part of parts) {
    const name = part === "meta" || part === "cmd" ? "command" : part === "control" ? "ctrl" : part === "option" ? "alt" : part;
    if (!(MODIFIERS as readonly string[]).includes(name) || modifiers.has(name)) return null;
    modifiers.add(name);
  }
  return [...MODIFIERS.filter((m) => modifiers.has(m)), key].join("+");
}

/** The keys of every action once a user's own are put over the defaults. */
export function effectiveShortcuts(own: KeyBindings = {}): Shortcut[] {
  return SHORTCUTS.map((shortcut) => (!shortcut.fixed && own[shortcut.event] ? { ...shortcut, keys: own[shortcut.event]! } : shortcut));
}

/** Whether a key typed in the editor would be swallowed: no Ctrl, Alt or ⌘, and not Escape or F1–F12. */
function typesText(combo: string): boolean {
  const parts = combo.split("+");
  const key = parts[parts.length - 1]!;
  if (parts.some((part) => part === "ctrl" || part === "alt" || part === "command")) return false;
  return !(key === "escape" || /^f\d+$/.test(key));
}

export interface BindingProblem {
  /** Where in `keys` (`key:up[1]`, or `key:up` for the action as a whole). */
  path: string;
  message: string;
}

/**
 * The problems with a user's own keys, none when they can be kept: an action that is not
 * one, a key that is not one, too many keys, a key already used by another action in a
 * scope both work in (with both named), and in the editor a key that would be typed.
 */
export function checkKeyBindings(own: Record<string, unknown>): BindingProblem[] {
  const problems: BindingProblem[] = [];
  const clean: KeyBindings = {};
  for (const [event, keys] of Object.entries(own)) {
    if (!REBINDABLE_EVENTS.includes(event)) {
      const fixed = SHORTCUTS.some((s) => s.event === event);
      problems.push({ path: event, message: fixed ? "is bound by the app itself (a clipboard key or the tree switcher) and cannot be rebound" : "is not an action with shortcuts" });
      continue;
    }
    if (!Array.isArray(keys) || keys.some((key) => typeof key !== "string")) {
      problems.push({ path: event, message: "must be a list of keys" });
      continue;
    }
    if (keys.length > MAX_KEYS_PER_ACTION) {
      problems.push({ path: event, message: `may have at most ${MAX_KEYS_PER_ACTION} keys` });
      continue;
    }
    const normalized: string[] = [];
    (keys as string[]).forEach((key, index) => {
      const combo = normalizeCombo(key);
      if (combo === null) problems.push({ path: `${event}[${index}]`, message: `"${key}" is not a key (write it like ctrl+shift+z, alt+pageup or j)` });
      else if (normalized.includes(combo)) problems.push({ path: `${event}[${index}]`, message: `${describeCombo(combo)} is listed twice` });
      else normalized.push(combo);
    });
    clean[event] = normalized;
  }
  if (problems.length > 0) return problems;
  const shortcuts = effectiveShortcuts(clean);
  for (const shortcut of shortcuts) {
    if (!(shortcut.event in clean)) continue;
    shortcut.keys.forEach((combo, index) => {
      if (shortcut.scopes.includes("editCard") && typesText(combo)) {
        problems.push({ path: `${shortcut.event}[${index}]`, message: `${describeCombo(combo)} would be typed into the card while editing; use Ctrl, Alt or ⌘ with it` });
        return;
      }
      const other = shortcuts.find(
        (s) => s !== shortcut && s.keys.some((k) => normalizeCombo(k) === combo) && s.scopes.some((scope) => shortcut.scopes.includes(scope)),
      );
      if (other) {
        problems.push({ path: `${shortcut.event}[${index}]`, message: `${describeCombo(combo)} is already the key of "${other.label}"` });
      }
    });
  }
  return problems;
}

const KEY_WORDS: Record<string, string> = {
  ctrl: "Ctrl", command: "⌘", alt: "Alt", shift: "Shift", enter: "Enter", escape: "Esc", backspace: "Backspace", del: "Delete",
  up: "↑", down: "↓", left: "←", right: "→", home: "Home", end: "End", pageup: "PgUp", pagedown: "PgDn", tab: "Tab", space: "Space", ins: "Insert",
};

/** Each part of a combo as the help shows it on a key cap: `ctrl+shift+z` → Ctrl, Shift, Z. */
export function comboParts(combo: string): string[] {
  return combo.split("+").map((part) => KEY_WORDS[part] ?? part.toUpperCase());
}

/** A combo in words: `ctrl+shift+z` → "Ctrl+Shift+Z". */
export function describeCombo(combo: string): string {
  return comboParts(combo).join("+");
}
