/**
 * Liveness and readiness for a process supervisor or a load balancer. `/healthz` says the
 * process answers and its store is usable; `/readyz` also says it takes new work: 503 from
 * the moment a shutdown begins, so a balancer drains the instance while its in-flight
 * requests finish. (The port opens only once the store is open, so a starting server
 * refuses connections rather than answering; "starting" covers an app built before that.)
 */
import { Router, type NextFunction, type Request, type Response } from "express";
import type { Store } from "../domain/ports/store.js";

export type Lifecycle = "starting" | "ready" | "stopping";

export function healthRoutes(store: Store, lifecycle: () => Lifecycle): Router {
  const router = Router();
  router.get("/healthz", (_req, res) => {
    const status = store.status();
    res.status(status === "open" ? 200 : 503).json({ status: status === "open" ? "ok" : status });
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
