/**
 * A user's appearance preferences (theme, card text size), kept on their record so they
 * follow the user to every browser. They are not part of the User record of SPEC §2
 * (`GET /api/index` shows exactly its fields): REST reads and sets them at
 * `/api/preferences`, GraphQL as `me { preferences }` and `setPreferences`.
 */
import type { Ports } from "./context.js";
import { NotFoundError } from "../shared/errors.js";
import { DEFAULT_PREFERENCES, type Preferences } from "../shared/preferences.js";
import { preferencesInput } from "../shared/schemas.js";
import { command } from "./command.js";
import { authorizeOwnAccount, type Actor } from "./policy.js";

/**
 * The user's preferences, defaults for what they never chose.
 * @throws UnauthenticatedError, ForbiddenError (policy); NotFoundError for an unknown user.
 */
export async function preferencesOf(ctx: Ports<"store">, actor: Actor | null, userId: string): Promise<Preferences> {
  authorizeOwnAccount(actor, userId);
  const user = await ctx.store.users.byId(userId);
  if (!user) throw new NotFoundError("User");
  return { ...DEFAULT_PREFERENCES, ...user.preferences };
}

/**
 * Sets the fields given (`{theme?, fontSize?}`); the others keep their values. Returns the
 * preferences as they now are. Changes of one user's preferences run one at a time, so two
 * requests setting different fields at once both hold.
 * @throws ValidationError for an unknown field or value (nothing is changed);
 *   UnauthenticatedError, ForbiddenError (policy); NotFoundError for an unknown user.
 */
export const setPreferences = command({
  name: "setPreferences",
  needs: ["store", "ownerLocks"],
  input: preferencesInput,
  action: "ownAccount",
  subject: (_ctx, { userId }: { userId: string }) => userId,
  async run(ctx, _actor: Actor | null, { userId }, change): Promise<Preferences> {
    // The per-owner queue, under a key of its own: a card import does not wait for this.
    return ctx.ownerLocks.run(`preferences:${userId}`, async () => {
      const user = await ctx.store.users.byId(userId);
      if (!user) throw new NotFoundError("User");
      const next: Preferences = { ...DEFAULT_PREFERENCES, ...user.preferences, ...definedFields(change) };
      if (!(await ctx.store.users.update(userId, { preferences: next }))) throw new NotFoundError("User");
      return next;
    });
  },
});

/** zod leaves optional fields out when absent, but a field sent as undefined must not clear one. */
function definedFields<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}
