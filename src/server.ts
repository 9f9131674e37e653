/**
 * Opens the store and listens. `close()` stops taking connections, lets in-flight requests
 * finish (up to the shutdown timeout, then cuts what is left), then flushes and closes the
 * store. `/readyz` answers 503 from the moment `close()` starts.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createApp } from "./app.js";
import type { Config } from "./config.js";
import { createDomainContext, NO_PEERS, type DomainContext } from "./domain/context.js";
import { CredentialChecker } from "./auth/credentials.js";
import { scheduleHistoryPruning } from "./domain/history.js";
import { scheduleSessionSweep } from "./domain/session-sweep.js";
import { injectAnswerFault, injectStepFault, scheduleIdempotencySweep } from "./domain/idempotency.js";
import { limitConnectionsPerAddress } from "./http/connection-limit.js";
import type { Lifecycle } from "./http/health.js";
import { createLogger, type Logger } from "./http/logger.js";
import { formatsOffThread } from "./formats/off-thread.js";
import { scryptHasherFor } from "./auth/scrypt-hasher.js";
import { openStore } from "./store/open-store.js";
import type { Store } from "./domain/ports/store.js";
import { answerHoldFault, controlFileFaults, stepHoldFault } from "./store/write-faults.js";

export const WEB_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/web");

export interface RunningServer {
  url: string;
  port: number;
  ctx: DomainContext;
  logger: Logger;
  /** How many requests direct routes have answered (src/http/direct-routes.ts). */
  directAnswers(): number;
  close(): Promise<void>;
}

export interface ServerHooks {
  /** Wraps the store the domain is given (tests count its reads this way). */
  decorateStore?(store: Store): Store;
  /** Requests sent through express's router even where a direct route would take them (tests compare the two). */
  viaExpress?(req: http.IncomingMessage): boolean;
}

export async function startServer(config: Config, hooks: ServerHooks = {}): Promise<RunningServer> {
  const logger = createLogger();
  let lifecycle: Lifecycle = "starting";
  // The reliability tests make appends fail through a control file (src/store/write-faults.ts),
  // and hold a keyed answer before it is kept (or a keyed request between two steps), to kill
  // or pause the process there.
  const faultsFile = process.env.CARDTREE_FAULTS_FILE;
  if (faultsFile) {
    injectAnswerFault(answerHoldFault(faultsFile, () => logger.info("fault: holding an answer before keeping it", {})));
    injectStepFault(stepHoldFault(faultsFile, () => logger.info("fault: holding a keyed request before its next step", {})));
  }
  // STORE=postgres has no data-directory lock: any number of processes share the database.
  const { store, settings, probe, feed, locks, treeLocks } = await openStore(config, {
    log: logger.error,
    info: logger.info,
    faults: faultsFile ? controlFileFaults(faultsFile) : undefined,
  });
  // With PostgreSQL, what crosses to the other processes sharing the database (SPEC §11).
  const shared = { feed, peers: feed ?? NO_PEERS, ownerLocks: locks, treeLocks };
  const domainStore = hooks.decorateStore?.(store) ?? store;
  const hasher = scryptHasherFor(config.limits);
  // Log-ins, and a password change's check of the current password, share this throttle;
  // built first, so the domain context is complete when it is made.
  const credentials = new CredentialChecker({ store: domainStore, config, peers: shared.peers, hasher }, settings.secret);
  const ctx = createDomainContext(domainStore, config, {
    formats: formatsOffThread(config.exports),
    hasher,
    loginAttempts: credentials,
    shared,
  });
  const app = createApp({
    ctx,
    credentials,
    secret: settings.secret,
    logger,
    webDir: WEB_DIR,
    lifecycle: () => lifecycle,
    probeStore: probe,
    noticesHeard: feed && (() => feed.complete),
  });
  // Timeouts are enforced on this check's beat, so it must be a fraction of the shortest.
  const checkEvery = Math.max(250, Math.min(30_000, Math.floor(config.timeouts.headersMs / 4)));
  const { viaExpress } = hooks;
  const listener = viaExpress ? (req: http.IncomingMessage, res: http.ServerResponse) => (viaExpress(req) ? app(req, res) : app.serve(req, res)) : app.serve;
  const server = http.createServer({ connectionsCheckingInterval: checkEvery, ...app.classes }, listener);
  server.on("upgrade", app.upgrade);
  const unused = unusedConnections(server);
  if (config.limits.connectionsPerAddress > 0 && config.trustProxy === false) {
    limitConnectionsPerAddress(server, config.limits.connectionsPerAddress, logger.info);
  }
  // Slow clients may not hold a connection open forever.
  server.requestTimeout = config.timeouts.requestMs;
  server.headersTimeout = config.timeouts.headersMs;
  // An idle kept-alive connection is closed after this. Node's 5 s let a client that reuses a
  // connection near that edge (clients keep it a second less than announced) meet a close
  // whenever its event loop lagged: "other side closed" on a loaded machine. 30 s makes that
  // edge rare, and stays within a proxy's usual reuse window.
  server.keepAliveTimeout = config.timeouts.keepAliveMs;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  lifecycle = "ready";
  // GraphQL's modules and schema load once the server is idle, not on the first /graphql
  // request (issue 27).
  const stopWarming = whenIdle(server, () => app.warmGraphql());
  const stopPruning = scheduleHistoryPruning(ctx, logger.info);
  const stopSweepingSessions = scheduleSessionSweep(ctx, logger.error);
  const stopSweepingKeys = scheduleIdempotencySweep(ctx, logger.error);
  const { port } = server.address() as AddressInfo;
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    ctx,
    logger,
    directAnswers: () => app.directAnswers(),
    close: () =>
      (closing ??= (async () => {
        lifecycle = "stopping";
        stopWarming();
        stopPruning();
        stopSweepingSessions();
        stopSweepingKeys();
        // Live streams and GraphQL WebSocket connections never finish on their own; they end
        // now, so their connections close.
        ctx.live.closeAll();
        ctx.presence.closeAll();
        if (config.timeouts.shutdownDelayMs > 0) {
          await new Promise((resolve) => setTimeout(resolve, config.timeouts.shutdownDelayMs));
        }
        await new Promise<void>((resolve) => {
          const deadline = setTimeout(() => server.closeAllConnections(), config.timeouts.shutdownMs);
          // A connection whose last request ends during the shutdown turns idle and would
          // otherwise stay for the keep-alive timeout (30 s): close each as it goes idle.
          // Node's closeIdleConnections leaves a connection that has sent nothing yet (a
          // browser's preconnect, a client's spare socket), which held every shutdown for the
          // whole shutdown timeout: those are closed too.
          const closeIdle = () => {
            server.closeIdleConnections();
            unused.closeAll();
          };
          const idle = setInterval(closeIdle, 100);
          server.close(() => {
            clearTimeout(deadline);
            clearInterval(idle);
            resolve();
          });
          closeIdle();
        });
        await feed?.close();
        await locks?.close();
        await treeLocks?.close();
        await store.close();
      })()),
  };
}

/**
 * The server's connections that have not sent a byte: `closeAll()` ends them. One that has
 * sent part of a request is left to finish it (closeIdleConnections and the shutdown
 * deadline see to it), as is every upgraded one (live WebSockets close on their own).
 */
function unusedConnections(server: http.Server): { closeAll(): void } {
  const open = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });
  return {
    closeAll() {
      for (const socket of open) if (socket.bytesRead === 0) socket.destroy();
    },
  };
}

/** How long no request may have started (or ended) before the server counts as idle. */
const IDLE_MS = 250;
/** A request running longer than this (a live stream, a big import) does not keep it busy. */
const LONG_REQUEST_MS = 1000;

/**
 * Runs `work` once, as soon as `server` is idle: no request started or ended for IDLE_MS,
 * and none running that began less than LONG_REQUEST_MS ago (so an open live stream does
 * not put it off forever); returns a function that cancels it. For work that holds the
 * event loop in long pieces (loading GraphQL: modules evaluated and the schema built,
 * ~0.5 s in pieces of up to ~200-450 ms): started right after listening, it stalled every
 * request of a load that began at once (a card write's p99 of ~600 ms; issue 32's bench).
 */
function whenIdle(server: http.Server, work: () => void): () => void {
  const running = new Map<http.ServerResponse, number>();
  let last = performance.now();
  const onRequest = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    last = performance.now();
    running.set(res, last);
    res.once("close", () => {
      running.delete(res);
      last = performance.now();
    });
  };
  server.on("request", onRequest);
  const stop = () => {
    clearInterval(timer);
    server.off("request", onRequest);
    running.clear();
  };
  const busy = (now: number) => {
    if (now - last < IDLE_MS) return true;
    for (const started of running.values()) if (now - started < LONG_REQUEST_MS) return true;
    return false;
  };
  const timer = setInterval(() => {
    if (busy(performance.now())) return;
    stop();
    work();
  }, 50);
  timer.unref();
  return stop;
}
