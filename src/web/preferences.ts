/**
 * Appearance preferences, per user: the theme (forest, light, dark) and the cards' font size.
 * The server keeps them on the user's record (`GET/PUT /api/preferences`), so they follow
 * the user to another browser; localStorage keeps a copy under the user's id
 * (`cardtree:prefs:<userId>`), so a page paints in the right theme before the server has
 * answered, and a reader of a public tree without a log-in (`anonymous`) keeps theirs too.
 */
import { DEFAULT_PREFERENCES, FONT_SIZES, MONO_FONTS, TEXT_FONTS, THEMES, type MonoFont, type Preferences, type TextFont, type Theme } from "../shared/preferences.js";
import { checkKeyBindings, type KeyBindings } from "../shared/shortcuts.js";
import { describeError, type ApiClient } from "./api.js";
import type { AppBus } from "./bus.js";
import { notify } from "./notify.js";
import type { Session } from "./session.js";

export { FONT_SIZES, type Preferences, type Theme };

export const TEXT_FONT_CHOICES: readonly { id: TextFont; label: string }[] = [
  { id: "default", label: "The app's own (system serif)" },
  { id: "literata", label: "Literata (serif, for long reading)" },
  { id: "atkinson", label: "Atkinson Hyperlegible (sans, for low vision)" },
  { id: "opendyslexic", label: "OpenDyslexic (for dyslexia)" },
];
export const MONO_FONT_CHOICES: readonly { id: MonoFont; label: string }[] = [
  { id: "default", label: "The system's monospace" },
  { id: "plex-mono", label: "IBM Plex Mono" },
];

/** Each choice's CSS font stack; `default` is the style sheet's own (base.css). */
const STACKS: Record<Exclude<TextFont | MonoFont, "default">, string> = {
  literata: '"Literata", Georgia, serif',
  atkinson: '"Atkinson Hyperlegible", system-ui, sans-serif',
  opendyslexic: '"OpenDyslexic", system-ui, sans-serif',
  "plex-mono": '"IBM Plex Mono", ui-monospace, monospace',
};

export const THEME_CHOICES: readonly { id: Theme; label: string }[] = [
  { id: "forest", label: "Forest (dark canvas, paper cards)" },
  { id: "light", label: "Light" },
  { id: "dark", label: "Dark" },
];

/** Known values only: anything else in storage (an older client, a hand edit) is a default. */
function checked(stored: Partial<Record<keyof Preferences, unknown>>): Preferences {
  return {
    theme: THEMES.find((theme) => theme === stored.theme) ?? DEFAULT_PREFERENCES.theme,
    fontSize: FONT_SIZES.find((size) => size === stored.fontSize) ?? DEFAULT_PREFERENCES.fontSize,
    keys: ownKeys(stored.keys),
    headingFont: TEXT_FONTS.find((font) => font === stored.headingFont) ?? DEFAULT_PREFERENCES.headingFont,
    bodyFont: TEXT_FONTS.find((font) => font === stored.bodyFont) ?? DEFAULT_PREFERENCES.bodyFont,
    monoFont: MONO_FONTS.find((font) => font === stored.monoFont) ?? DEFAULT_PREFERENCES.monoFont,
  };
}

/** The user's own keys as kept, or none when they are not a valid set (an older client's, a hand edit). */
function ownKeys(stored: unknown): KeyBindings {
  if (typeof stored !== "object" || stored === null || Array.isArray(stored)) return {};
  return checkKeyBindings(stored as Record<string, unknown>).length === 0 ? (stored as KeyBindings) : {};
}

export class AppearancePreferences {
  /** Bumped by every local change, so a server answer that predates one does not undo it. */
  private localChanges = 0;

  constructor(
    private readonly bus: AppBus,
    private readonly session: Session,
    private readonly api: ApiClient,
  ) {}

  /** The preferences this browser last knew for the current user. */
  read(): Preferences {
    try {
      return checked(JSON.parse(localStorage.getItem(this.storageKey()) ?? "{}"));
    } catch {
      return { ...DEFAULT_PREFERENCES };
    }
  }

  /** Puts the current user's preferences on the page. */
  apply(preferences = this.read()): void {
    const root = document.documentElement;
    root.dataset.theme = preferences.theme;
    root.style.setProperty("--card-font-size", `${preferences.fontSize}px`);
    const font = (property: string, choice: TextFont | MonoFont) => {
      if (choice === "default") root.style.removeProperty(property);
      else root.style.setProperty(property, STACKS[choice]);
    };
    font("--card-heading-font", preferences.headingFont);
    font("--card-body-font", preferences.bodyFont);
    font("--card-mono-font", preferences.monoFont);
    document.querySelector('meta[name="color-scheme"]')?.setAttribute("content", preferences.theme === "dark" ? "dark" : "light");
  }

  /** The writer picked something: shown at once, kept here, and sent to the server. */
  save(change: Partial<Preferences>): Preferences {
    const next = { ...this.read(), ...change };
    this.localChanges++;
    this.remember(next);
    this.apply(next);
    this.bus.trigger("preferences:change", next);
    if (this.session.user) {
      this.api.setPreferences(change).catch((error) => notify(`Couldn't keep your appearance settings for your other browsers: ${describeError(error)}`, { kind: "error" }));
    }
    return next;
  }

  /**
   * Asks the server for the logged-in user's preferences (at start and after a log-in) and
   * shows them if they differ from what this browser had. A failure keeps the local copy.
   */
  async load(): Promise<void> {
    const user = this.session.user;
    if (!user) return;
    const changesBefore = this.localChanges;
    let stored: Preferences;
    try {
      stored = checked(await this.api.preferences());
    } catch {
      return;
    }
    if (this.session.user?._id !== user._id || this.localChanges !== changesBefore) return;
    const shown = this.read();
    this.remember(stored);
    const same = (key: keyof Preferences) => (key === "keys" ? JSON.stringify(shown.keys) === JSON.stringify(stored.keys) : shown[key] === stored[key]);
    if ((Object.keys(stored) as (keyof Preferences)[]).every(same)) return;
    this.apply(stored);
    this.bus.trigger("preferences:change", stored);
  }

  /**
   * Keeps the user's own keyboard shortcuts (`{}`: every default) on the server first: a set
   * it refuses (a clash, a key that is not one) changes nothing and rejects with its words.
   */
  async saveKeys(keys: KeyBindings): Promise<Preferences> {
    const stored = checked(await this.api.setPreferences({ keys }));
    this.localChanges++;
    const next = { ...this.read(), keys: stored.keys };
    this.remember(next);
    this.bus.trigger("preferences:change", next);
    return next;
  }

  private storageKey(): string {
    return `cardtree:prefs:${this.session.user?._id ?? "anonymous"}`;
  }

  private remember(preferences: Preferences): void {
    try {
      localStorage.setItem(this.storageKey(), JSON.stringify(preferences));
    } catch {
      // Storage off: the server still has them.
    }
  }
}
