/**
 * Accounts: sign-up, the User record with its live counts, favourites and password change.
 * Checking credentials on each request lives in src/auth/, which calls `findUserByEmail`
 * and the hasher; nothing here knows about HTTP.
 */
import { randomBytes, randomInt } from "node:crypto";
import type { Ports } from "./context.js";
import { ConflictError, ForbiddenError, NotFoundError } from "../shared/errors.js";
import { newUserId } from "../shared/ids.js";
import { authorizeOperator, type Actor } from "./policy.js";
import { presentUser, type UserView } from "./presenters.js";
import type { StoredUser } from "../shared/records.js";
import { cardLimitInput, signupInput, updateMeInput } from "../shared/schemas.js";
import { command } from "./command.js";

/**
 * Creates an account: the visitor signing up (a null actor), or the operator adding a user,
 * who may do so while web sign-up is off. `requester` (the client's address) is who waits
 * in the hasher's line.
 * @throws ValidationError for a bad email or password.
 * @throws ForbiddenError when sign-up is off.
 * @throws ConflictError when the email is taken.
 * @throws TooManyRequestsError when the requester already has its share of hashing.
 */
export const signUp = command({
  name: "signUp",
  needs: ["store", "config", "hasher", "clock"],
  input: signupInput,
  action: "signUp",
  async run(ctx, _actor: Actor | null, { requester }: { requester?: string }, { email, password }): Promise<StoredUser> {
    if (await ctx.store.users.byEmail(email)) throw new ConflictError("An account with this email already exists.");
    const user: StoredUser = {
      _id: newUserId(),
      email,
      passwordHash: await ctx.hasher.hash(password, requester),
      limit: ctx.config.defaultCardLimit,
      favoriteTrees: [],
      randomIndex: randomInt(100),
      userHash: randomBytes(4).toString("hex"),
      createdAt: ctx.clock.now(),
    };
    try {
      await ctx.store.users.insert(user);
    } catch (err) {
      // Two sign-ups for one email at once: the store's unique index decides.
      if (await ctx.store.users.byEmail(email)) throw new ConflictError("An account with this email already exists.");
      throw err;
    }
    return user;
  },
});

export function findUserByEmail(ctx: Ports<"store">, email: string): Promise<StoredUser | null> {
  return ctx.store.users.byEmail(email.trim().toLowerCase());
}

/** The User record of SPEC §2 with its live counts. */
export async function userRecord(ctx: Ports<"store">, user: StoredUser, csrf: string): Promise<UserView> {
  const trees = await ctx.store.trees.forUser(user._id);
  const treeIds = trees.map((t) => t._id);
  const cardsCount = await ctx.store.cards.countLiveByTrees(treeIds);
  return presentUser(user, { treeIds: new Set(treeIds), cardsCount }, csrf);
}

/** How many live cards stand in the trees the user owns: what `limit` counts. */
export async function ownedCardsCount(ctx: Ports<"store">, userId: string): Promise<number> {
  const owned = (await ctx.store.trees.forUser(userId)).filter((t) => t.owner === userId);
  return ctx.store.cards.countLiveByTrees(owned.map((t) => t._id));
}

/** Whose account a command changes, and on whose behalf. */
export interface AccountTarget {
  /** The account as loaded for this request (the signed-in user's own). */
  user: StoredUser;
  /** The cookie session making the change: it stays signed in after a password change. */
  keepSessionId?: string;
  /** The client's address: who waits in the hasher's line. */
  requester?: string;
}

/**
 * Sets favourites and/or changes the password. A password change ends every session of
 * the user but `keepSessionId` (the cookie session that made the change, if any), as
 * `resetPassword` ends all of them: whoever held the old password is out.
 * @throws ValidationError for a malformed body.
 * @throws ForbiddenError when `currentPassword` is wrong, or for anyone but the user.
 * @throws TooManyRequestsError when the requester already has its share of hashing.
 */
export const updateMe = command({
  name: "updateMe",
  needs: ["store", "hasher", "loginAttempts", "live"],
  input: updateMeInput,
  action: "ownAccount",
  subject: (_ctx, { user }: AccountTarget) => user._id,
  async run(ctx, _actor, { user, keepSessionId, requester }, body): Promise<StoredUser> {
    const fields: Partial<StoredUser> = {};
    if (body.favoriteTrees) fields.favoriteTrees = [...new Set(body.favoriteTrees)];
    if (body.newPassword !== undefined) {
      // Typing the current password is a log-in attempt: throttled and counted as one.
      await ctx.loginAttempts.asLoginAttempt(user.email, requester ?? "local", async () => {
        if (!(await ctx.hasher.verify(body.currentPassword ?? "", user.passwordHash, requester))) {
          throw new ForbiddenError("The current password is wrong.");
        }
      });
      fields.passwordHash = await ctx.hasher.hash(body.newPassword, requester);
    }
    if (Object.keys(fields).length === 0) return user;
    const updated = await ctx.store.users.update(user._id, fields);
    if (!updated) throw new NotFoundError("User");
    if (fields.passwordHash !== undefined) {
      await ctx.store.sessions.removeForUser(user._id, keepSessionId);
      ctx.live.signedOut({ userId: user._id, keepSessionId });
    }
    return updated;
  },
});

/**
 * Sets a password without knowing the old one (the CLI's `user passwd`); operator only.
 * @throws ForbiddenError for anyone but the operator; ValidationError for a bad email or
 *   password; NotFoundError for an unknown email.
 */
export const resetPassword = command({
  name: "resetPassword",
  needs: ["store", "hasher", "live"],
  input: signupInput,
  action: "operator",
  async run(ctx, _actor, _target: Record<string, never>, { email, password }): Promise<StoredUser> {
    const user = await findUserByEmail(ctx, email);
    if (!user) throw new NotFoundError("User");
    const updated = await ctx.store.users.update(user._id, { passwordHash: await ctx.hasher.hash(password) });
    await ctx.store.sessions.removeForUser(user._id);
    ctx.live.signedOut({ userId: user._id });
    return updated!;
  },
});

/**
 * Sets how many cards a user may own (-1: unlimited); operator only.
 * @throws ForbiddenError for anyone but the operator; ValidationError for a bad limit;
 *   NotFoundError for an unknown email.
 */
export const setCardLimit = command({
  name: "setCardLimit",
  needs: ["store"],
  input: cardLimitInput,
  action: "operator",
  async run(ctx, _actor, { email }: { email: string }, { limit }): Promise<StoredUser> {
    const user = await findUserByEmail(ctx, email);
    if (!user) throw new NotFoundError("User");
    return (await ctx.store.users.update(user._id, { limit }))!;
  },
});

/** Every account, oldest first, as User records with their live counts; operator only. */
export async function listUsers(ctx: Ports<"store">, actor: Actor): Promise<UserView[]> {
  authorizeOperator(actor);
  const users = await ctx.store.users.list();
  return Promise.all(users.map((user) => userRecord(ctx, user, "")));
}
