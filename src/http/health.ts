/**
 * Liveness and readiness for a process supervisor or a load balancer. `/healthz` says the
 * process answers and its store is usable; `/readyz` also says it takes new work: 503 from
 * the moment a shutdown begins, so a balancer drains the instance while its in-flight
 * requests finish. (The port opens only once the store is open, so a starting server
 * refuses connections rather than answering; "starting" covers an app built before that.)
 * A store with a server of its own (PostgreSQL) is asked on each `/healthz`, so the check
 * reports the database; `/readyz` does not ask it: every process shares that database, and
 * a balancer draining them all would not help. With processes sharing a database,
 * `/healthz` also says whether this one hears the others' changes (`notices`): while it
 * does not, it still answers rightly (its caches stop trusting memory and ask the
 * database), but live streams here miss other processes' edits until it is back.
 */
import { Router, type NextFunction, type Request, type Response } from "express";
import type { Store } from "../domain/ports/store.js";

export type Lifecycle = "starting" | "ready" | "stopping";

/** Resolves when the store's database answers; rejects (soon) when it does not. */
export type StoreProbe = () => Promise<void>;

/** Whether the process hears other processes' changes (PostgreSQL's notice connection is up). */
export type NoticesProbe = () => boolean;

export function healthRoutes(store: Store, lifecycle: () => Lifecycle, probe?: StoreProbe, notices?: NoticesProbe): Router {
  const router = Router();
  router.get("/healthz", async (_req, res) => {
    const status = store.status();
    if (status !== "open") {
      res.status(503).json({ status });
      return;
    }
    if (!probe) {
      res.json({ status: "ok" });
      return;
    }
    const heard = notices ? { notices: notices() ? "listening" : "reconnecting" } : {};
    try {
      await probe();
      res.json({ status: "ok", database: "ok", ...heard });
    } catch {
      res.status(503).json({ status: "unavailable", database: "unreachable", ...heard });
    }
  });
  router.get("/readyz", (_req, res) => {
    const state = lifecycle();
    const ready = state === "ready" && store.status() === "open";
    res.status(ready ? 200 : 503).json({ status: ready ? "ready" : state === "ready" ? store.status() : state });
  });
  return router;
}

/**
 * While stopping, every response closes its connection: a client that keeps a keep-alive
 * connection busy would otherwise hold the shutdown open until its timeout.
 */
export function closeConnectionsWhenStopping(lifecycle: () => Lifecycle) {
  return (_req: Request, res: Response, next: NextFunction) => {
    if (lifecycle() === "stopping") res.set("Connection", "close");
    next();
  };
}
