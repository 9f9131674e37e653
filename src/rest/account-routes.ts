/**
 * Sign-up, log-in, log-out, the caller's own User record (`/api/index`) and their appearance
 * preferences (`/api/preferences`).
 */
import { execute } from "../domain/command.js";
import { Router, type Request, type Response } from "express";
import { clientAddress, requireUser } from "../auth/middleware.js";
import { SESSION_COOKIE, SIGNED_IN_COOKIE } from "../auth/sessions.js";
import { SignupBudget } from "../auth/signup-budget.js";
import { credentialsInput, parseInput } from "../shared/schemas.js";
import { preferencesOf, setPreferences } from "../domain/preferences.js";
import { signUp, updateMe, userRecord } from "../domain/users.js";
import type { RestDeps } from "./deps.js";

export function accountRoutes({ ctx, credentials, sessions, jsonLimit }: RestDeps): Router {
  const router = Router();

  const startSession = async (req: Request, res: Response, userId: string) => {
    const { token, session } = await sessions.start(userId);
    res.cookie(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: "lax",
      secure: req.secure,
      path: "/",
      maxAge: sessions.ttlMs,
    });
    res.cookie(SIGNED_IN_COOKIE, "1", { sameSite: "lax", secure: req.secure, path: "/", maxAge: sessions.ttlMs });
    return session;
  };

  const signups = new SignupBudget(ctx.config.limits.signupsPerAddress, ctx.config.limits.signupsTotal);
  // Processes sharing the store (SPEC §11) count each other's sign-ups against the budget.
  ctx.peers.onSignedUp((address, at) => signups.record(address, at));

  router.post("/signup", jsonLimit, async (req, res) => {
    const requester = clientAddress(req);
    const giveBack = signups.take(requester);
    const user = await execute(ctx, null, signUp, { requester }, req.body ?? {}).catch((err: unknown) => {
      giveBack();
      throw err;
    });
    ctx.peers.signedUp(requester, Date.now());
    const session = await startSession(req, res, user._id);
    res.status(201).json(await userRecord(ctx, user, session.csrf));
  });

  router.post("/login", jsonLimit, async (req, res) => {
    const { email, password } = parseInput(credentialsInput, req.body ?? {});
    const user = await credentials.check(email, password, clientAddress(req));
    if (req.auth.session) await sessions.end(req.auth.session);
    const session = await startSession(req, res, user._id);
    res.json(await userRecord(ctx, user, session.csrf));
  });

  router.post("/logout", async (req, res) => {
    if (req.auth.session) await sessions.end(req.auth.session);
    res.clearCookie(SESSION_COOKIE, { path: "/" });
    res.clearCookie(SIGNED_IN_COOKIE, { path: "/" });
    res.status(204).end();
  });

  router.get("/index", async (req, res) => {
    const user = requireUser(req);
    res.json(await userRecord(ctx, user, req.auth.session?.csrf ?? ""));
  });

  router.put("/index", jsonLimit, async (req, res) => {
    const user = requireUser(req);
    const requester = clientAddress(req);
    const updated = await execute(ctx, user, updateMe, { user, keepSessionId: req.auth.session?._id, requester }, req.body ?? {});
    res.json(await userRecord(ctx, updated, req.auth.session?.csrf ?? ""));
  });

  router.get("/preferences", async (req, res) => {
    const user = requireUser(req);
    res.json(await preferencesOf(ctx, user, user._id));
  });

  router.put("/preferences", jsonLimit, async (req, res) => {
    const user = requireUser(req);
    res.json(await execute(ctx, user, setPreferences, { userId: user._id }, req.body ?? {}));
  });

  return router;
}
