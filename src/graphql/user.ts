/**
 * The User record (SPEC §2) and the `me` query. `offers` is left out: it is always `{}`,
 * and GraphQL has no object type without fields.
 */
import type { UserView } from "../domain/presenters.js";
import { userRecord } from "../domain/users.js";
import { builder } from "./builder.js";
import { requireUser } from "./context.js";

export const UserType = builder.objectRef<UserView>("User").implement({
  description: "The signed-in account. No password material ever appears here.",
  fields: (t) => ({
    id: t.exposeID("_id"),
    email: t.exposeString("email", { description: "Stored lower-cased." }),
    limit: t.exposeInt("limit", { description: "The most cards the user may own; -1 is unlimited." }),
    hasBillingId: t.exposeBoolean("hasBillingId", { description: "Always false on this server." }),
    createdAt: t.exposeString("createdAt", { description: "ISO 8601 UTC." }),
    treesCount: t.exposeInt("treesCount", { description: "Trees the user can open." }),
    cardsCount: t.exposeInt("cardsCount", { description: "Live cards of those trees." }),
    favoriteTrees: t.exposeIDList("favoriteTrees"),
    randomIndex: t.exposeInt("randomIndex", { description: "0–99, fixed at sign-up." }),
    userHash: t.exposeString("userHash"),
    csrf: t.exposeString("csrf", {
      description: "The cookie session's CSRF token (send it as X-CSRF-Token); empty for basic credentials.",
    }),
  }),
});

builder.queryField("me", (t) =>
  t.field({
    type: UserType,
    description: "The caller's account. Anonymous callers get an `unauthenticated` error.",
    resolve: (_root, _args, context) => userRecord(context.domain, requireUser(context), context.csrf),
  }),
);
