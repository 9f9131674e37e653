/**
 * Appearance preferences, per user: the theme (forest, light, dark) and the cards' font size.
 * Kept in localStorage under the user's id (`cardtree:prefs:<userId>`, `anonymous` for a
 * reader of a public tree without a log-in), so two people sharing a browser keep their own.
 * They do not follow the user to another browser yet: that needs a server-side setting on
 * the user record (reported, not built here, since the server's user layer is not ours).
 */
import type { AppContext } from "./context.js";

type PreferencesContext = Pick<AppContext, "bus" | "session">;

export const THEMES = [
  { id: "forest", label: "Forest (dark canvas, paper cards)" },
  { id: "light", label: "Light" },
  { id: "dark", label: "Dark" },
] as const;
export type Theme = (typeof THEMES)[number]["id"];

export const FONT_SIZES = [14, 16, 18, 20, 22] as const;

export interface Preferences {
  theme: Theme;
  fontSize: number;
}

const DEFAULTS: Preferences = { theme: "forest", fontSize: 16 };

function storageKey(app: PreferencesContext): string {
  return `cardtree:prefs:${app.session.user?._id ?? "anonymous"}`;
}

export function readPreferences(app: PreferencesContext): Preferences {
  try {
    const stored = JSON.parse(localStorage.getItem(storageKey(app)) ?? "{}") as Partial<Preferences>;
    return {
      theme: THEMES.some((t) => t.id === stored.theme) ? (stored.theme as Theme) : DEFAULTS.theme,
      fontSize: FONT_SIZES.includes(stored.fontSize as never) ? (stored.fontSize as number) : DEFAULTS.fontSize,
    };
  } catch {
    return { ...DEFAULTS };
  }
}

/** Puts the current user's preferences on the page. */
export function applyPreferences(app: PreferencesContext, preferences = readPreferences(app)): void {
  const root = document.documentElement;
  root.dataset.theme = preferences.theme;
  root.style.setProperty("--card-font-size", `${preferences.fontSize}px`);
  document.querySelector('meta[name="color-scheme"]')?.setAttribute("content", preferences.theme === "dark" ? "dark" : "light");
}

export function savePreferences(app: PreferencesContext, change: Partial<Preferences>): Preferences {
  const next = { ...readPreferences(app), ...change };
  try {
    localStorage.setItem(storageKey(app), JSON.stringify(next));
  } catch {
    // Storage off: the choice holds for this page only.
  }
  applyPreferences(app, next);
  app.bus.trigger("preferences:change", next);
  return next;
}
