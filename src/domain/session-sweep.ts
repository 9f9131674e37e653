/**
 * Expired cookie sessions are deleted from the store on a timer (`SESSION_SWEEP_MS`). A
 * session is refused once past its `expiresAt` whether swept or not (auth/sessions.ts), and
 * its live streams end at that moment (live.ts); the sweep keeps the store from holding
 * every session ever started. Each process sharing a database sweeps; deleting what
 * another already deleted is harmless.
 */
import type { Ports } from "./context.js";

/** Sweeps now and every `ctx.config.sessions.sweepMs`; returns the stop. */
export function scheduleSessionSweep(ctx: Ports<"store" | "clock" | "config">, log: (message: string, fields: Record<string, unknown>) => void): () => void {
  let running = false;
  const sweep = () => {
    if (running) return;
    running = true;
    ctx.store.sessions
      .removeExpired(ctx.clock.now())
      .catch((err: unknown) => log("sweeping expired sessions failed", { error: String(err) }))
      .finally(() => (running = false));
  };
  sweep();
  const timer = setInterval(sweep, ctx.config.sessions.sweepMs);
  timer.unref();
  return () => clearInterval(timer);
}
