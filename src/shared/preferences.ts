/**
 * A user's appearance preferences (SPEC §8 "themes and font size", issue 16): what the
 * browser client offers and the server keeps on the user record, so they follow the user to
 * every browser. Written once here for both; the zod schemas that check them are in
 * schemas.ts (input) and record-schemas.ts (output).
 */

export const THEMES = ["forest", "light", "dark"] as const;
export type Theme = (typeof THEMES)[number];

/** The cards' text sizes in CSS pixels. */
export const FONT_SIZES = [14, 16, 18, 20, 22] as const;
export type FontSize = (typeof FONT_SIZES)[number];

export interface Preferences {
  theme: Theme;
  fontSize: FontSize;
}

/** What a user who never chose has. */
export const DEFAULT_PREFERENCES: Readonly<Preferences> = Object.freeze({ theme: "forest", fontSize: 16 });
