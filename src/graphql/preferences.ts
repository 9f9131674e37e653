/**
 * A user's appearance preferences: `me { preferences }` and `setPreferences`, the GraphQL
 * side of `GET/PUT /api/preferences`. Values are plain strings and numbers checked by the
 * same zod schema as the REST body, so both surfaces refuse the same input alike.
 */
import { runValidated } from "./commands.js";
import { preferencesOf, setPreferences } from "../domain/preferences.js";
import type { Preferences } from "../shared/preferences.js";
import { preferencesGraphqlInput } from "../shared/schemas.js";
import { builder } from "./builder.js";
import { requireUser } from "./context.js";
import { UserType } from "./user.js";

/** A user's preferences, with whose they are (their id). */
type UserPreferences = Preferences & { userId: string };

const KeyBindingType = builder.objectRef<{ action: string; keys: string[] }>("KeyBinding").implement({
  description: "An action the user gave keys of their own, and those keys (Mousetrap combos: `alt+k`, `ctrl+shift+z`).",
  fields: (t) => ({
    action: t.exposeString("action", { description: "The bus event the keys trigger (`key:down`, `modal:show:history`)." }),
    keys: t.exposeStringList("keys", { description: "Its keys; empty: the action has no key." }),
  }),
});

const KeyBindingInput = builder.inputType("KeyBindingInput", {
  fields: (t) => ({
    action: t.string({ required: true, description: "The bus event (`key:down`)." }),
    keys: t.stringList({ required: true, description: "Its keys (`down`, `n`); a clash with another action's is refused." }),
  }),
});

const PreferencesType = builder.objectRef<UserPreferences>("Preferences").implement({
  description: "How the browser client looks for this user, on every browser they use.",
  fields: (t) => ({
    id: t.exposeID("userId", {
      description: "The user's id: `me { preferences { id } }` and `setPreferences { id }` are one object in a normalized client cache.",
    }),
    theme: t.exposeString("theme", { description: "forest, light or dark." }),
    fontSize: t.exposeInt("fontSize", { description: "The cards' text size in CSS pixels: 14, 16, 18, 20 or 22." }),
    keys: t.field({
      type: [KeyBindingType],
      description: "The user's own keyboard shortcuts: each action they rebound with its keys; empty when every key is the default.",
      resolve: (preferences) => Object.entries(preferences.keys).map(([action, keys]) => ({ action, keys })),
    }),
    headingFont: t.exposeString("headingFont", { description: "The cards' headings' typeface: default, literata, atkinson or opendyslexic." }),
    bodyFont: t.exposeString("bodyFont", { description: "The cards' text's typeface: default, literata, atkinson or opendyslexic." }),
    monoFont: t.exposeString("monoFont", { description: "Code's typeface: default or plex-mono." }),
  }),
});

const PreferencesInput = builder.inputType("PreferencesInput", {
  description: "Only the fields given change.",
  fields: (t) => ({
    theme: t.string({ description: "forest, light or dark." }),
    fontSize: t.int({ description: "14, 16, 18, 20 or 22." }),
    keys: t.field({ type: [KeyBindingInput], description: "Replaces the user's own keys whole; [] brings every default back." }),
    headingFont: t.string({ description: "default, literata, atkinson or opendyslexic." }),
    bodyFont: t.string({ description: "default, literata, atkinson or opendyslexic." }),
    monoFont: t.string({ description: "default or plex-mono." }),
  }),
  validate: preferencesGraphqlInput,
});

builder.objectField(UserType, "preferences", (t) =>
  t.field({
    type: PreferencesType,
    description: "Defaults where the user never chose.",
    resolve: async (user, _args, context) => ({ ...(await preferencesOf(context.domain, requireUser(context), user._id)), userId: user._id }),
  }),
);

builder.mutationField("setPreferences", (t) =>
  t.field({
    type: PreferencesType,
    description: "Sets the caller's appearance preferences; returns them as they now are.",
    args: { input: t.arg({ type: PreferencesInput, required: true }) },
    resolve: async (_root, { input }, context) => {
      const user = requireUser(context);
      return { ...(await runValidated(context, user, setPreferences, { userId: user._id }, input)), userId: user._id };
    },
  }),
);
