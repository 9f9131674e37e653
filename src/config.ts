/**
 * Instance configuration from the environment (SPEC §9 and the limits of SPEC §4).
 */
import path from "node:path";

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  signup: boolean;
  /** Trust X-Forwarded-* from a reverse proxy (then cookies are Secure behind HTTPS). */
  trustProxy: boolean;
  /** Card limit given to new users: -1 is unlimited. */
  defaultCardLimit: number;
  logRequests: boolean;
  /** Slow clients: most time to send the headers, and the whole request. */
  /**
   * `shutdownDelayMs`: after SIGTERM, how long /readyz says 503 while new requests are
   * still served, so a load balancer stops sending before the port closes.
   */
  timeouts: { headersMs: number; requestMs: number; shutdownMs: number; shutdownDelayMs: number };
  /** Exports off the event loop (src/formats/export/worker-pool.ts; docs/reliability.md "Markdown and export cost"). */
  exports: { workers: number; queue: number; timeoutMs: number; workerMemoryMb: number };
  /** When the store rewrites a datafile that has grown (src/store/nedb-compaction.ts). */
  compaction: { checkIntervalMs: number; minAppendedLines: number; garbageRatio: number };
  limits: {
    jsonBodyBytes: number;
    importBodyBytes: number;
    importCards: number;
    loginFailures: number;
    loginWindowMs: number;
    /** Scrypt hashes allowed to run at once; more wait their turn. */
    concurrentHashes: number;
  };
}

function integer(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new Error(`${name} must be a whole number, got "${value}".`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    port: integer(env.PORT, 3000, "PORT"),
    host: env.HOST ?? "0.0.0.0",
    dataDir: path.resolve(env.DATA_DIR ?? "data"),
    signup: env.SIGNUP !== "off",
    trustProxy: env.TRUST_PROXY === "1" || env.TRUST_PROXY === "true",
    defaultCardLimit: integer(env.CARD_LIMIT, -1, "CARD_LIMIT"),
    logRequests: env.LOG !== "off",
    timeouts: {
      headersMs: integer(env.HEADERS_TIMEOUT_MS, 20_000, "HEADERS_TIMEOUT_MS"),
      requestMs: integer(env.REQUEST_TIMEOUT_MS, 60_000, "REQUEST_TIMEOUT_MS"),
      shutdownMs: integer(env.SHUTDOWN_TIMEOUT_MS, 30_000, "SHUTDOWN_TIMEOUT_MS"),
      shutdownDelayMs: integer(env.SHUTDOWN_DELAY_MS, 0, "SHUTDOWN_DELAY_MS"),
    },
    exports: {
      workers: integer(env.EXPORT_WORKERS, 2, "EXPORT_WORKERS"),
      queue: integer(env.EXPORT_QUEUE, 16, "EXPORT_QUEUE"),
      timeoutMs: integer(env.EXPORT_TIMEOUT_MS, 120_000, "EXPORT_TIMEOUT_MS"),
      workerMemoryMb: integer(env.EXPORT_WORKER_MEMORY_MB, 1024, "EXPORT_WORKER_MEMORY_MB"),
    },
    compaction: {
      checkIntervalMs: integer(env.COMPACT_CHECK_MS, 60_000, "COMPACT_CHECK_MS"),
      minAppendedLines: integer(env.COMPACT_MIN_LINES, 1000, "COMPACT_MIN_LINES"),
      garbageRatio: integer(env.COMPACT_GARBAGE_RATIO, 1, "COMPACT_GARBAGE_RATIO"),
    },
    limits: {
      jsonBodyBytes: integer(env.JSON_BODY_LIMIT, 1024 * 1024, "JSON_BODY_LIMIT"),
      importBodyBytes: integer(env.IMPORT_BODY_LIMIT, 16 * 1024 * 1024, "IMPORT_BODY_LIMIT"),
      importCards: integer(env.IMPORT_CARD_LIMIT, 100_000, "IMPORT_CARD_LIMIT"),
      loginFailures: integer(env.LOGIN_FAILURE_LIMIT, 10, "LOGIN_FAILURE_LIMIT"),
      loginWindowMs: integer(env.LOGIN_WINDOW_MS, 15 * 60 * 1000, "LOGIN_WINDOW_MS"),
      concurrentHashes: integer(env.CONCURRENT_HASHES, 4, "CONCURRENT_HASHES"),
    },
  };
}
