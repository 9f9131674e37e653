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

/**
 * Typefaces for the cards' headings and text (issue 30): the system's (`default`), or one of
 * those shipped with the app (fonts served by this server, never from elsewhere).
 */
export const TEXT_FONTS = ["default", "literata", "atkinson", "opendyslexic"] as const;
export type TextFont = (typeof TEXT_FONTS)[number];
/** Typefaces for code in cards. */
export const MONO_FONTS = ["default", "plex-mono"] as const;
export type MonoFont = (typeof MONO_FONTS)[number];

export interface Preferences {
  theme: Theme;
  fontSize: FontSize;
  /** The user's own keyboard shortcuts: for each action they rebound, its keys (shortcuts.ts). */
  keys: KeyBindings;
  headingFont: TextFont;
  bodyFont: TextFont;
  monoFont: MonoFont;
}

/** What a user who never chose has. */
export const DEFAULT_PREFERENCES: Readonly<Preferences> = Object.freeze({
  theme: "forest",
  fontSize: 16,
  keys: Object.freeze({}) as KeyBindings,
  headingFont: "default",
  bodyFont: "default",
  monoFont: "default",
});
