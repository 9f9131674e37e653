/**
 * Liveness and readiness for a process supervisor or a load balancer. `/healthz` says the
 * process answers and its store is usable; `/readyz` also says it takes new work: 503
 * before start-up has finished and from the moment a shutdown begins, so a balancer
 * drains the instance while its in-flight requests finish.
 */
import { Router } from "express";
import type { Store } from "../store/store.js";

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
