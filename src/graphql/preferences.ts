/**
 * A user's appearance preferences: `me { preferences }` and `setPreferences`, the GraphQL
 * side of `GET/PUT /api/preferences`. Values are plain strings and numbers checked by the
 * same zod schema as the REST body, so both surfaces refuse the same input alike.
 */
import { runValidated } from "./commands.js";
import { preferencesOf, setPreferences } from "../domain/preferences.js";
import type { Preferences } from "../shared/preferences.js";
import { builder } from "./builder.js";
import { requireUser } from "./context.js";
import { UserType } from "./user.js";

/** A user's preferences, with whose they are (their id). */
type UserPreferences = Preferences & { userId: string };

const PreferencesType = builder.objectRef<UserPreferences>("Preferences").implement({
  description: "How the browser client looks for this user, on every browser they use.",
  fields: (t) => ({
    id: t.exposeID("userId", {
      description: "The user's id: `me { preferences { id } }` and `setPreferences { id }` are one object in a normalized client cache.",
    }),
    theme: t.exposeString("theme", { description: "forest, light or dark." }),
    fontSize: t.exposeInt("fontSize", { description: "The cards' text size in CSS pixels: 14, 16, 18, 20 or 22." }),
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
    headingFont: t.string({ description: "default, literata, atkinson or opendyslexic." }),
    bodyFont: t.string({ description: "default, literata, atkinson or opendyslexic." }),
    monoFont: t.string({ description: "default or plex-mono." }),
  }),
  validate: setPreferences.input,
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
