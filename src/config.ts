/**
 * Instance configuration from the environment (SPEC §9 and the limits of SPEC §4).
 */
import { isIP } from "node:net";
import path from "node:path";
import { LEASE_MS } from "./domain/idempotency.js";

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Which engine keeps the records (SPEC §11): NeDB files in `dataDir`, or PostgreSQL. */
  store: StoreConfig;
  signup: boolean;
  /**
   * Which reverse proxies' X-Forwarded-* to believe: false (none), a hop count, or their
   * addresses/CIDRs. The client is the right-most address not trusted; see `parseTrustProxy`.
   */
  trustProxy: false | number | string[];
  /** Card limit given to new users: -1 is unlimited. */
  defaultCardLimit: number;
  logRequests: boolean;
  /** Slow clients: most time to send the headers, and the whole request. */
  /**
   * `shutdownDelayMs`: after SIGTERM, how long /readyz says 503 while new requests are
   * still served, so a load balancer stops sending before the port closes.
   * `idempotencyLeaseMs`: how long an idempotency key's claim holds without renewal, so how
   * long a retry waits (409) for the key of a request whose process died (src/domain/idempotency.ts).
   */
  timeouts: { headersMs: number; requestMs: number; keepAliveMs: number; shutdownMs: number; shutdownDelayMs: number; idempotencyLeaseMs: number };
  /** Exports off the event loop (src/formats/export/worker-pool.ts; docs/reliability.md "Markdown and export cost"). */
  exports: { workers: number; queue: number; timeoutMs: number; workerMemoryMb: number };
  /** When the store rewrites a datafile that has grown (src/store/nedb-compaction.ts). */
  compaction: { checkIntervalMs: number; minAppendedLines: number; garbageRatio: number };
  /**
   * `on` (the default): the embedded store answers a write only once it is on stable
   * storage (fdatasync). `off`: once it is in the page cache, faster, and a power cut or a
   * kernel crash may lose the writes of the last seconds (a crash of the process does not).
   * PostgreSQL has its own setting (`synchronous_commit`).
   */
  sync: "on" | "off";
  /** Changes older than this many days are pruned from the change log (never a tree's latest); -1 keeps everything. */
  historyDays: number;
  /**
   * Most cards the read model keeps in memory (whole trees, least recently read dropped
   * first; a tree bigger than this is kept alone). A 10,000-card tree held costs ~20 MB of
   * process memory. Smaller on PostgreSQL, where every process keeps its own and the
   * database holds the cards anyway.
   */
  readModelCards: number;
  limits: {
    jsonBodyBytes: number;
    importBodyBytes: number;
    importCards: number;
    /** Failed log-ins within `loginWindowMs` before 429: per account and address, per address, per account (auth/login-throttle.ts). */
    loginFailures: number;
    loginAddressFailures: number;
    loginAccountFailures: number;
    loginWindowMs: number;
    /** Scrypt hashes allowed to run at once; more wait their turn. */
    concurrentHashes: number;
    /** log2 of scrypt's cost N for new password hashes (14: N = 16384); each hash keeps its own. */
    passwordHashCost: number;
    /** Hashes one client address may have running or waiting; more are answered 429. */
    hashesPerAddress: number;
    /** Hashes allowed to wait for a turn, from all addresses; more are answered 429. */
    hashQueue: number;
    /** Accounts web sign-up may make per hour from one address / in all; -1: no limit. */
    signupsPerAddress: number;
    signupsTotal: number;
    /** Most characters (UTF-16 code units) in one card's content; see `cardContentLimit`. */
    cardContentChars: number;
    /** A user's own browser scripts (docs/scripting.md): most bytes (UTF-8) of one, and how many. */
    userScriptBytes: number;
    userScripts: number;
    /**
     * Open connections one client address may hold (IPv6 by its /64); past it a new one is
     * closed at once. 0: no limit. Not applied behind a proxy (`TRUST_PROXY`), whose address
     * carries every client (src/http/connection-limit.ts).
     */
    connectionsPerAddress: number;
  };
  /**
   * Images in cards from other hosts, which learn each reader's address: `allow` loads them
   * everywhere; `click` (the default) loads them on members' tree pages and, on public
   * pages, only when the reader clicks; `block` loads images from this server only.
   */
  remoteImages: RemoteImagePolicy;
  /**
   * Cookie sessions: how long one lasts from log-in (its live streams end then too), and
   * how often expired ones are deleted from the store.
   */
  sessions: { ttlMs: number; sweepMs: number };
  /** What one /graphql request may ask for (docs/graphql.md, "Limits"). */
  graphql: GraphQLLimits;
  /** Live streams: SSE and GraphQL subscriptions (docs/reliability.md, "Live streams"). */
  live: LiveLimits;
}

export type RemoteImagePolicy = "allow" | "click" | "block";

export interface LiveLimits {
  /** Streams one signed-in user may hold open at once. */
  perUser: number;
  /** Anonymous streams one client address may hold open at once. */
  perAddress: number;
  /** Streams open on the server at once, from everyone. */
  total: number;
  /** A reader further behind than this many changes gets `reset` instead of a replay. */
  maxBacklog: number;
  /** Between two comment lines on an idle SSE stream, so proxies keep it open. */
  heartbeatMs: number;
  /** Bytes an SSE reader may leave unread in its socket before it is dropped. */
  bufferBytes: number;
  /** Events a stream may hold for a reader that is not taking them before it is dropped. */
  queueEvents: number;
}

export type StoreConfig =
  | { engine: "nedb" }
  | {
      engine: "postgres";
      databaseUrl: string;
      /** Connections one process holds at most. */
      poolSize: number;
    };

export interface GraphQLLimits {
  /** Tokens of a document; the parser stops there, long before its recursion is deep. */
  tokens: number;
  /** Fields nested in one operation. */
  depth: number;
  aliases: number;
  directives: number;
  /** Static cost of the operation (src/graphql/operation-limits.ts). */
  cost: number;
  /** Mutation fields in one request. */
  mutations: number;
  /**
   * Most times an answer may hold the same data: each card and tree record against its REST
   * JSON, and each history, trash, export... (src/graphql/answer-bound.ts).
   */
  copies: number;
  /** Values resolved while executing one request: each selected field of each card, tree or collaborator. */
  values: number;
  /** Characters of card text in one answer. */
  text: number;
  /** Milliseconds of the event loop one request's execution may use (src/graphql/result-budget.ts). */
  timeMs: number;
  /**
   * The same two budgets for a caller who is not signed in: smaller, as anyone can send such
   * a request; and the milliseconds of execution one client address regains per second
   * (src/graphql/execution-allowance.ts).
   */
  anonymous: { values: number; timeMs: number; perSecondMs: number };
}

function syncMode(value: string | undefined): "on" | "off" {
  if (value === undefined || value === "" || value === "on") return "on";
  if (value === "off") return "off";
  throw new Error(`SYNC must be "on" or "off", not ${JSON.stringify(value)}.`);
}

function integer(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new Error(`${name} must be a whole number, got "${value}".`);
  return n;
}

function atLeast(least: number, n: number, name: string): number {
  if (n < least) throw new Error(`${name} must be at least ${least}, got ${n}.`);
  return n;
}

/** The read model's budget by store: the embedded store keeps every card in memory anyway. */
const READ_MODEL_CARDS = { nedb: 200_000, postgres: 30_000 } as const;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const jsonBodyBytes = integer(env.JSON_BODY_LIMIT, 1024 * 1024, "JSON_BODY_LIMIT");
  const store = storeConfig(env);
  return {
    port: integer(env.PORT, 3000, "PORT"),
    host: env.HOST ?? "0.0.0.0",
    dataDir: path.resolve(env.DATA_DIR ?? "data"),
    store,
    signup: env.SIGNUP !== "off",
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    defaultCardLimit: integer(env.CARD_LIMIT, -1, "CARD_LIMIT"),
    logRequests: env.LOG !== "off",
    timeouts: {
      headersMs: integer(env.HEADERS_TIMEOUT_MS, 20_000, "HEADERS_TIMEOUT_MS"),
      requestMs: integer(env.REQUEST_TIMEOUT_MS, 60_000, "REQUEST_TIMEOUT_MS"),
      keepAliveMs: atLeast(1000, integer(env.KEEP_ALIVE_TIMEOUT_MS, 30_000, "KEEP_ALIVE_TIMEOUT_MS"), "KEEP_ALIVE_TIMEOUT_MS"),
      shutdownMs: integer(env.SHUTDOWN_TIMEOUT_MS, 30_000, "SHUTDOWN_TIMEOUT_MS"),
      shutdownDelayMs: integer(env.SHUTDOWN_DELAY_MS, 0, "SHUTDOWN_DELAY_MS"),
      idempotencyLeaseMs: atLeast(1000, integer(env.IDEMPOTENCY_LEASE_MS, LEASE_MS, "IDEMPOTENCY_LEASE_MS"), "IDEMPOTENCY_LEASE_MS"),
    },
    exports: {
      workers: integer(env.EXPORT_WORKERS, 2, "EXPORT_WORKERS"),
      queue: integer(env.EXPORT_QUEUE, 16, "EXPORT_QUEUE"),
      timeoutMs: integer(env.EXPORT_TIMEOUT_MS, 120_000, "EXPORT_TIMEOUT_MS"),
      // 1024 MiB: the biggest honest job, parsing a 16 MiB Markdown seed (the import limit),
      // ran out of 512 under tsx (the tests); a 20,000-card docx needs 384, a 5,000-card pptx 256.
      workerMemoryMb: integer(env.EXPORT_WORKER_MEMORY_MB, 1024, "EXPORT_WORKER_MEMORY_MB"),
    },
    compaction: {
      checkIntervalMs: integer(env.COMPACT_CHECK_MS, 60_000, "COMPACT_CHECK_MS"),
      minAppendedLines: integer(env.COMPACT_MIN_LINES, 1000, "COMPACT_MIN_LINES"),
      garbageRatio: integer(env.COMPACT_GARBAGE_RATIO, 1, "COMPACT_GARBAGE_RATIO"),
    },
    sync: syncMode(env.SYNC),
    historyDays: env.HISTORY_DAYS ? atLeast(1, integer(env.HISTORY_DAYS, -1, "HISTORY_DAYS"), "HISTORY_DAYS") : -1,
    readModelCards: atLeast(0, integer(env.READ_MODEL_CARDS, READ_MODEL_CARDS[store.engine], "READ_MODEL_CARDS"), "READ_MODEL_CARDS"),
    limits: {
      jsonBodyBytes,
      importBodyBytes: integer(env.IMPORT_BODY_LIMIT, 16 * 1024 * 1024, "IMPORT_BODY_LIMIT"),
      importCards: integer(env.IMPORT_CARD_LIMIT, 100_000, "IMPORT_CARD_LIMIT"),
      loginFailures: integer(env.LOGIN_FAILURE_LIMIT, 10, "LOGIN_FAILURE_LIMIT"),
      loginAddressFailures: integer(env.LOGIN_ADDRESS_FAILURE_LIMIT, 50, "LOGIN_ADDRESS_FAILURE_LIMIT"),
      loginAccountFailures: integer(env.LOGIN_ACCOUNT_FAILURE_LIMIT, 50, "LOGIN_ACCOUNT_FAILURE_LIMIT"),
      loginWindowMs: integer(env.LOGIN_WINDOW_MS, 15 * 60 * 1000, "LOGIN_WINDOW_MS"),
      // Two: half of libuv's pool of four threads, which file reads and writes need too (four
      // hashes at once made every save wait for one to finish), and as many as this two-core
      // machine can run in parallel anyway.
      concurrentHashes: atLeast(1, integer(env.CONCURRENT_HASHES, 2, "CONCURRENT_HASHES"), "CONCURRENT_HASHES"),
      hashesPerAddress: atLeast(1, integer(env.HASHES_PER_ADDRESS, 4, "HASHES_PER_ADDRESS"), "HASHES_PER_ADDRESS"),
      passwordHashCost: passwordHashCost(env.PASSWORD_HASH_COST),
      hashQueue: atLeast(0, integer(env.HASH_QUEUE_LIMIT, 32, "HASH_QUEUE_LIMIT"), "HASH_QUEUE_LIMIT"),
      signupsPerAddress: atLeast(-1, integer(env.SIGNUP_LIMIT_PER_ADDRESS, 50, "SIGNUP_LIMIT_PER_ADDRESS"), "SIGNUP_LIMIT_PER_ADDRESS"),
      signupsTotal: atLeast(-1, integer(env.SIGNUP_LIMIT_TOTAL, 500, "SIGNUP_LIMIT_TOTAL"), "SIGNUP_LIMIT_TOTAL"),
      cardContentChars: cardContentLimit(env, jsonBodyBytes),
      userScriptBytes: atLeast(1, integer(env.USER_SCRIPT_BYTES, 1024 * 1024, "USER_SCRIPT_BYTES"), "USER_SCRIPT_BYTES"),
      userScripts: atLeast(0, integer(env.USER_SCRIPT_COUNT, 20, "USER_SCRIPT_COUNT"), "USER_SCRIPT_COUNT"),
      connectionsPerAddress: atLeast(0, integer(env.MAX_CONNECTIONS_PER_ADDRESS, 1024, "MAX_CONNECTIONS_PER_ADDRESS"), "MAX_CONNECTIONS_PER_ADDRESS"),
    },
    graphql: {
      tokens: integer(env.GRAPHQL_TOKEN_LIMIT, 1000, "GRAPHQL_TOKEN_LIMIT"),
      depth: integer(env.GRAPHQL_DEPTH_LIMIT, 15, "GRAPHQL_DEPTH_LIMIT"),
      aliases: integer(env.GRAPHQL_ALIAS_LIMIT, 30, "GRAPHQL_ALIAS_LIMIT"),
      directives: integer(env.GRAPHQL_DIRECTIVE_LIMIT, 50, "GRAPHQL_DIRECTIVE_LIMIT"),
      cost: integer(env.GRAPHQL_COST_LIMIT, 50_000, "GRAPHQL_COST_LIMIT"),
      mutations: integer(env.GRAPHQL_MUTATION_LIMIT, 20, "GRAPHQL_MUTATION_LIMIT"),
      copies: atLeast(1, integer(env.GRAPHQL_COPY_LIMIT, 4, "GRAPHQL_COPY_LIMIT"), "GRAPHQL_COPY_LIMIT"),
      values: integer(env.GRAPHQL_VALUE_LIMIT, 1_000_000, "GRAPHQL_VALUE_LIMIT"),
      text: integer(env.GRAPHQL_TEXT_LIMIT, 64 * 1024 * 1024, "GRAPHQL_TEXT_LIMIT"),
      timeMs: atLeast(1, integer(env.GRAPHQL_TIME_LIMIT_MS, 10_000, "GRAPHQL_TIME_LIMIT_MS"), "GRAPHQL_TIME_LIMIT_MS"),
      anonymous: {
        values: integer(env.GRAPHQL_ANONYMOUS_VALUE_LIMIT, 100_000, "GRAPHQL_ANONYMOUS_VALUE_LIMIT"),
        timeMs: atLeast(1, integer(env.GRAPHQL_ANONYMOUS_TIME_LIMIT_MS, 100, "GRAPHQL_ANONYMOUS_TIME_LIMIT_MS"), "GRAPHQL_ANONYMOUS_TIME_LIMIT_MS"),
        perSecondMs: atLeast(1, integer(env.GRAPHQL_ANONYMOUS_TIME_PER_SECOND_MS, 100, "GRAPHQL_ANONYMOUS_TIME_PER_SECOND_MS"), "GRAPHQL_ANONYMOUS_TIME_PER_SECOND_MS"),
      },
    },
    remoteImages: remoteImagePolicy(env.REMOTE_IMAGES),
    sessions: {
      ttlMs: atLeast(1000, integer(env.SESSION_TTL_MS, 30 * 24 * 60 * 60 * 1000, "SESSION_TTL_MS"), "SESSION_TTL_MS"),
      sweepMs: atLeast(100, integer(env.SESSION_SWEEP_MS, 60 * 60 * 1000, "SESSION_SWEEP_MS"), "SESSION_SWEEP_MS"),
    },
    live: {
      perUser: atLeast(0, integer(env.LIVE_STREAMS_PER_USER, 16, "LIVE_STREAMS_PER_USER"), "LIVE_STREAMS_PER_USER"),
      perAddress: atLeast(0, integer(env.LIVE_STREAMS_PER_ADDRESS, 32, "LIVE_STREAMS_PER_ADDRESS"), "LIVE_STREAMS_PER_ADDRESS"),
      total: atLeast(0, integer(env.LIVE_STREAMS_TOTAL, 10_000, "LIVE_STREAMS_TOTAL"), "LIVE_STREAMS_TOTAL"),
      maxBacklog: atLeast(0, integer(env.LIVE_MAX_BACKLOG, 1000, "LIVE_MAX_BACKLOG"), "LIVE_MAX_BACKLOG"),
      heartbeatMs: atLeast(100, integer(env.LIVE_HEARTBEAT_MS, 20_000, "LIVE_HEARTBEAT_MS"), "LIVE_HEARTBEAT_MS"),
      bufferBytes: atLeast(1024, integer(env.LIVE_BUFFER_BYTES, 1024 * 1024, "LIVE_BUFFER_BYTES"), "LIVE_BUFFER_BYTES"),
      queueEvents: atLeast(1, integer(env.LIVE_QUEUE_EVENTS, 256, "LIVE_QUEUE_EVENTS"), "LIVE_QUEUE_EVENTS"),
    },
  };
}

/** `REMOTE_IMAGES`: allow, click (the default) or block. */
/** Lowest and highest `PASSWORD_HASH_COST`: below 10 a hash is too cheap to guess against, above 20 scrypt needs over 1 GiB. */
export const PASSWORD_HASH_COSTS = { least: 10, most: 20, fallback: 14 } as const;

function passwordHashCost(value: string | undefined): number {
  const cost = integer(value, PASSWORD_HASH_COSTS.fallback, "PASSWORD_HASH_COST");
  if (cost < PASSWORD_HASH_COSTS.least || cost > PASSWORD_HASH_COSTS.most) {
    throw new Error(`PASSWORD_HASH_COST must be between ${PASSWORD_HASH_COSTS.least} and ${PASSWORD_HASH_COSTS.most} (log2 of scrypt's N), got ${value}.`);
  }
  return cost;
}

function remoteImagePolicy(value: string | undefined): RemoteImagePolicy {
  if (value === undefined || value === "") return "click";
  if (value === "allow" || value === "click" || value === "block") return value;
  throw new Error(`REMOTE_IMAGES must be "allow", "click" or "block", got "${value}".`);
}

/** `STORE=nedb` (the default) or `STORE=postgres` with `DATABASE_URL`. */
function storeConfig(env: NodeJS.ProcessEnv): StoreConfig {
  const engine = env.STORE === undefined || env.STORE === "" ? "nedb" : env.STORE;
  if (engine === "nedb") return { engine };
  if (engine !== "postgres") throw new Error(`STORE must be "nedb" or "postgres", got "${engine}".`);
  const databaseUrl = env.DATABASE_URL ?? "";
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new Error("STORE=postgres needs DATABASE_URL, a postgres:// URL (postgres://user:password@host:5432/database).");
  }
  const poolSize = atLeast(1, integer(env.DATABASE_POOL_SIZE, 10, "DATABASE_POOL_SIZE"), "DATABASE_POOL_SIZE");
  return { engine, databaseUrl, poolSize };
}

/**
 * `TRUST_PROXY`: off (unset, `0`, `false`, `off`); a hop count (`1` or `true` is one proxy
 * in front, the old meaning); or a comma-separated list of proxy addresses, CIDRs or
 * express's names (`loopback`, `linklocal`, `uniquelocal`). Either way express reads
 * X-Forwarded-For from the right, so entries a client wrote itself (on the left) never
 * become its address.
 */
export function parseTrustProxy(value: string | undefined): false | number | string[] {
  const text = (value ?? "").trim();
  if (text === "" || text === "0" || text === "false" || text === "off") return false;
  if (text === "true") return 1;
  if (/^\d+$/.test(text)) return Number(text);
  const entries = text.split(",").map((e) => e.trim()).filter((e) => e !== "");
  for (const entry of entries) {
    const [address, bits, extra] = entry.split("/");
    const named = ["loopback", "linklocal", "uniquelocal"].includes(entry);
    const family = isIP(address);
    const prefixOk = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
    if (!named && (family === 0 || !prefixOk || extra !== undefined)) {
      throw new Error(`TRUST_PROXY must be a hop count or a list of addresses/CIDRs, got "${entry}".`);
    }
  }
  return entries;
}

/**
 * What one JSON character of a string may cost: a control character or a lone surrogate is
 * written `\u0001` (6 bytes), and a client may escape every non-ASCII character so too.
 */
const WORST_BYTES_PER_CHAR = 6;
/**
 * Room in a PUT body for the card's other fields (Backbone-style clients send them all):
 * 16 KiB, or a quarter of a JSON body limit set very small.
 */
const putBodyRoom = (jsonBodyBytes: number) => Math.min(16 * 1024, Math.floor(jsonBodyBytes / 4));

/**
 * `CARD_CONTENT_LIMIT` (default 100,000 characters, less if the JSON body limit is smaller):
 * every card the service accepts, by any path, must fit back through `PUT` in the worst
 * case of JSON escaping, so a larger value than the JSON body limit allows is refused.
 */
function cardContentLimit(env: NodeJS.ProcessEnv, jsonBodyBytes: number): number {
  const most = Math.floor((jsonBodyBytes - putBodyRoom(jsonBodyBytes)) / WORST_BYTES_PER_CHAR);
  const chosen = integer(env.CARD_CONTENT_LIMIT, Math.min(100_000, most), "CARD_CONTENT_LIMIT");
  if (chosen < 1 || chosen > most) {
    throw new Error(
      `CARD_CONTENT_LIMIT must be between 1 and ${most} characters with JSON_BODY_LIMIT=${jsonBodyBytes}: a card must fit back through PUT (6 bytes a character escaped, plus room for its other fields).`,
    );
  }
  return chosen;
}
