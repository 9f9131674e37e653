/**
 * `/settings/keys`: the user's keyboard shortcuts (issue 30, Gingko Writer's most requested
 * setting). Every action with its keys; a key can be added (press it) or taken off; a key
 * another action already uses where both work is refused, saying which action has it; "Reset
 * to defaults" brings every default back. The keys are kept with the user's preferences on
 * the server (`PUT /api/preferences {keys}`, which checks them the same way), so they follow
 * the user to every browser. The bus events the keys trigger (`key:*`) never change.
 */
import { describeError } from "../api.js";
import type { AppContext } from "../context.js";
import { keyLabel } from "../dialogs/help.js";
import { h, mount } from "../dom.js";
import { notify } from "../notify.js";
import { checkKeyBindings, describeCombo, MAX_KEYS_PER_ACTION, SHORTCUTS, type KeyBindings, type Shortcut } from "../../shared/shortcuts.js";
import { topBar } from "./header.js";
import "../shared-chunk.js";

const NAMED: Record<string, string> = {
  ArrowUp: "up",
  ArrowDown: "down",
  ArrowLeft: "left",
  ArrowRight: "right",
  PageUp: "pageup",
  PageDown: "pagedown",
  Home: "home",
  End: "end",
  Enter: "enter",
  Escape: "escape",
  Backspace: "backspace",
  Delete: "del",
  Insert: "ins",
  Tab: "tab",
  " ": "space",
};

/**
 * The Mousetrap combo a key press stands for, or null for a modifier alone. Letters and
 * digits are read from the key's place (so Alt+K is `alt+k` on a Mac too); other characters as
 * typed, without Shift when Shift made them (`?`, not `shift+/`), as Mousetrap matches them.
 */
export function comboOf(event: KeyboardEvent): string | null {
  if (["Control", "Alt", "Shift", "Meta", "AltGraph", "CapsLock"].includes(event.key)) return null;
  let key: string;
  let shift = event.shiftKey;
  const place = /^(?:Key([A-Z])|Digit(\d))$/.exec(event.code);
  if (place) key = (place[1] ?? place[2]!).toLowerCase();
  else if (NAMED[event.key]) key = NAMED[event.key]!;
  else if (/^F\d{1,2}$/.test(event.key)) key = event.key.toLowerCase();
  else if (event.key.length === 1) {
    key = event.key.toLowerCase();
    shift = false;
  } else return null;
  const parts = [event.ctrlKey && "ctrl", event.altKey && "alt", shift && "shift", event.metaKey && "command", key].filter(Boolean);
  return parts.join("+");
}

export function renderShortcutSettings(app: AppContext, root: HTMLElement): () => void {
  const bar = topBar(app);
  const problem = h("p", { class: "keys-problem", role: "alert", hidden: true });
  const table = h("div", { class: "keys-list" });
  const reset = h("button", { type: "button", class: "button", onclick: () => void save({}, "Every key is back to its default.") }, "Reset to defaults");
  mount(
    root,
    bar.element,
    h(
      "main",
      { class: "trees-page settings-page keys-page" },
      h("div", { class: "trees-heading" }, h("h1", {}, "Keyboard shortcuts"), reset),
      h(
        "p",
        { class: "field-hint" },
        "Press “Add a key” beside an action, then the keys you want for it. A key another action already uses is refused. Your keys follow you to every browser you sign in on; scripts still hear the same events (",
        h("code", {}, "key:up"),
        ", …).",
      ),
      problem,
      table,
    ),
  );
  document.title = "Keyboard shortcuts · Cardtree";
  let own: KeyBindings = { ...app.preferences.read().keys };
  let recording: { event: string; stop: () => void } | null = null;

  const say = (text: string | null) => {
    problem.hidden = text === null;
    problem.textContent = text ?? "";
  };

  /** Keeps `next` on the server (which checks it too); shows the refusal and keeps what was. */
  const save = async (next: KeyBindings, done: string) => {
    const problems = checkKeyBindings(next);
    if (problems.length > 0) return say(`Not changed: ${problems[0]!.message}.`);
    try {
      own = { ...(await app.preferences.saveKeys(next)).keys };
      say(null);
      notify(done, { timeout: 3000 });
    } catch (error) {
      say(describeError(error));
    }
    draw();
  };

  const keysOf = (shortcut: Shortcut): string[] => own[shortcut.event] ?? [...shortcut.keys];

  const record = (shortcut: Shortcut, button: HTMLButtonElement) => {
    recording?.stop();
    button.textContent = "Press the keys… (Esc: cancel)";
    button.classList.add("recording");
    const onKey = (event: KeyboardEvent) => {
      event.preventDefault();
      event.stopPropagation();
      if (event.key === "Escape" && !event.ctrlKey && !event.altKey && !event.metaKey) return stop(true);
      const combo = comboOf(event);
      if (combo === null) return;
      stop(false);
      const keys = keysOf(shortcut);
      if (keys.includes(combo)) return say(`${describeCombo(combo)} is already a key of “${shortcut.label}”.`);
      void save({ ...own, [shortcut.event]: [...keys, combo] }, `${describeCombo(combo)} now: ${shortcut.label}.`);
    };
    const stop = (redraw: boolean) => {
      window.removeEventListener("keydown", onKey, true);
      recording = null;
      if (redraw) draw();
    };
    // On the window, in the capture phase: before Mousetrap and the page's own keys.
    window.addEventListener("keydown", onKey, true);
    recording = { event: shortcut.event, stop: () => stop(false) };
  };

  const row = (shortcut: Shortcut): HTMLElement => {
    const keys = keysOf(shortcut);
    const changed = own[shortcut.event] !== undefined;
    const add = h(
      "button",
      { type: "button", class: "button button-small", disabled: keys.length >= MAX_KEYS_PER_ACTION, "aria-label": `Add a key for ${shortcut.label}` },
      "Add a key",
    );
    add.addEventListener("click", () => record(shortcut, add));
    return h(
      "div",
      { class: `keys-row${changed ? " keys-row-changed" : ""}`, "data-event": shortcut.event },
      h("span", { class: "keys-action" }, shortcut.label),
      h(
        "span",
        { class: "keys-current" },
        keys.length === 0 ? h("span", { class: "field-hint" }, "no key") : null,
        keys.map((combo) =>
          h(
            "span",
            { class: "keys-key" },
            keyLabel(combo),
            shortcut.fixed
              ? null
              : h(
                  "button",
                  {
                    type: "button",
                    class: "button button-quiet button-small keys-remove",
                    "aria-label": `Remove ${describeCombo(combo)} from ${shortcut.label}`,
                    onclick: () => void save({ ...own, [shortcut.event]: keys.filter((k) => k !== combo) }, `${describeCombo(combo)} no longer: ${shortcut.label}.`),
                  },
                  "×",
                ),
          ),
        ),
      ),
      shortcut.fixed
        ? h("span", { class: "field-hint" }, "The browser's clipboard key")
        : h(
            "span",
            { class: "keys-buttons" },
            add,
            changed
              ? h(
                  "button",
                  {
                    type: "button",
                    class: "button button-quiet button-small",
                    "aria-label": `Default keys for ${shortcut.label}`,
                    onclick: () => {
                      const rest = { ...own };
                      delete rest[shortcut.event];
                      void save(rest, `${shortcut.label}: default keys again.`);
                    },
                  },
                  "Default",
                )
              : null,
          ),
    );
  };

  const draw = () => {
    const sections = new Map<string, Shortcut[]>();
    for (const shortcut of SHORTCUTS) sections.set(shortcut.section, [...(sections.get(shortcut.section) ?? []), shortcut]);
    table.replaceChildren(
      ...[...sections].map(([title, shortcuts]) =>
        h("section", { class: "keys-section", "aria-label": title }, h("h2", {}, title), ...shortcuts.map(row)),
      ),
    );
    reset.disabled = Object.keys(own).length === 0;
  };
  draw();
  // The server's copy, should this browser's be older.
  const onChange = () => {
    if (recording) return;
    own = { ...app.preferences.read().keys };
    draw();
  };
  app.bus.on("preferences:change", onChange, table);
  void app.preferences.load().catch(() => undefined);
  return () => {
    recording?.stop();
    app.bus.offAll(table);
  };
}
