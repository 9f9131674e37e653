/**
 * A user's appearance preferences and keyboard shortcuts (SPEC §8 "themes and font size", issue 16): what the
 * browser client offers and the server keeps on the user record, so they follow the user to
 * every browser. Written once here for both; the zod schemas that check them are in
 * schemas.ts (input) and record-schemas.ts (output).
 */

import type { KeyBindings } from "./shortcuts.js";

export const THEMES = ["forest", "light", "dark"] as const;
export type Theme = (typeof THEMES)[number];

/** The cards' text sizes in CSS pixels. */
export const FONT_SIZES = [14, 16, 18, 20, 22] as const;
export type FontSize = (typeof FONT_SIZES)[number];

export interface Preferences {
  theme: Theme;
  fontSize: FontSize;
  /** The user's own keyboard shortcuts: for each action they rebound, its keys (shortcuts.ts). */
  keys: KeyBindings;
}

/** What a user who never chose has. */
export const DEFAULT_PREFERENCES: Readonly<Preferences> = Object.freeze({ theme: "forest", fontSize: 16, keys: Object.freeze({}) as KeyBindings });
