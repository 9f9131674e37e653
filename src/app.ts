/**
 * The express application: security headers and request logs, then who is calling
 * (shared by /api, /graphql and the print view), the REST facade, GraphQL, the health
 * check, the print view and the browser client. Built here and listened on in server.ts,
 * so tests can build it too.
 */
import { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { compressResponses } from "./http/compression.js";
import express, { type ErrorRequestHandler, type Request, type RequestHandler } from "express";
import { authenticateConnection } from "./auth/connection-auth.js";
import { authenticate, type Auth } from "./auth/middleware.js";
import type { CredentialChecker } from "./auth/credentials.js";
import { SessionManager } from "./auth/sessions.js";
import type { DomainContext } from "./domain/context.js";
import { directRoutes } from "./http/direct-routes.js";
import { errorHandler } from "./http/error-response.js";
import { closeConnectionsWhenStopping, healthRoutes, type Lifecycle, type NoticesProbe, type StoreProbe } from "./http/health.js";
import { jsonBody } from "./http/json-body.js";
import { printPage } from "./http/print-page.js";
import { requestLog, type Logger } from "./http/logger.js";
import { securityHeaders } from "./http/security-headers.js";
import { webClient } from "./http/web-client.js";
import { restApi } from "./rest/api.js";

export interface AppDeps {
  ctx: DomainContext;
  /** Who is calling: the checker the domain context was built with as its `loginAttempts`. */
  credentials: CredentialChecker;
  secret: string;
  logger: Logger;
  webDir: string;
  /** Where the process is in its life, for `/readyz`; always ready when not given. */
  lifecycle?: () => Lifecycle;
  /** Asks the store's database whether it answers, for `/healthz` (PostgreSQL). */
  probeStore?: StoreProbe;
  /** Whether other processes' changes are heard, for `/healthz` (PostgreSQL). */
  noticesHeard?: NoticesProbe;
}

/** The HTTP server's `upgrade` listener: GraphQL over WebSocket on /graphql. */
export type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export function createApp({
  ctx,
  credentials,
  secret,
  logger,
  webDir,
  lifecycle = () => "ready",
  probeStore,
  noticesHeard,
}: AppDeps): express.Express & {
  warmGraphql(): void;
  upgrade: UpgradeListener;
  serve(req: IncomingMessage, res: ServerResponse): void;
  directAnswers(): number;
  classes: RequestClasses;
} {
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", ctx.config.trustProxy);
  app.set("etag", false);

  const sessions = new SessionManager(ctx.store, secret, (sessionId) => ctx.live.signedOut({ sessionId }), ctx.config.sessions.ttlMs);
  const who = authenticate({ store: ctx.store, credentials, sessions });

  // What every request goes through, with express and on a direct route alike.
  const everyRequest: RequestHandler[] = [securityHeaders(ctx.config.remoteImages), closeConnectionsWhenStopping(lifecycle)];
  if (ctx.config.logRequests) everyRequest.push(requestLog(logger, ctx.config.trustProxy !== false));
  app.use(everyRequest);
  const compressing = compressResponses();
  app.use(compressing);
  app.use(healthRoutes(ctx.store, lifecycle, probeStore, noticesHeard));
  const api = restApi({
    ctx,
    credentials,
    sessions,
    logger,
    jsonLimit: jsonBody(ctx.config.limits.jsonBodyBytes),
    importLimit: jsonBody(ctx.config.limits.importBodyBytes),
  });
  app.use("/api", who, api);
  const graphql = lazyGraphql(ctx, logger, (req, payload) => authenticateConnection({ store: ctx.store, credentials, sessions }, req, payload));
  app.use("/graphql", who, graphql.http);
  app.use(printPage(ctx, who));
  app.use(webClient(webDir, ctx.config.remoteImages));
  const errors = errorHandler(logger);
  app.use(errors);
  // The cached reads skip the router (src/http/direct-routes.ts): the same handlers, in the
  // order express runs them. The streaming compression middleware is not among them: what
  // these routes send is compressed already or marked to go as it is (sendCompressible).
  // An error's answer is an ordinary JSON body, so it does meet that middleware, as under express.
  const directErrors: ErrorRequestHandler = (err, req, res, next) => compressing(req, res, () => errors(err, req, res, next));
  const direct = directRoutes(app, everyRequest, [{ prefix: "/api", steps: [who], routes: api.direct }], directErrors, logger);
  /** The server's `request` listener: a direct route when one takes the request, else express. */
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    if (!direct.handle(req, res)) app(req, res);
  };
  const upgrade: UpgradeListener = (req, socket, head) => {
    if (lifecycle() !== "ready") {
      socket.end("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    // What express does to each request it handles: `req.ip` (TRUST_PROXY), `req.get`, cookies.
    Object.setPrototypeOf(req, app.request);
    Object.assign(req, { app });
    graphql.upgrade(req as Request, socket, head);
  };
  return Object.assign(app, { warmGraphql: graphql.warm, upgrade, serve, directAnswers: () => direct.answered, classes: requestClasses(app) });
}

/** The classes node builds each request and response of the server from (`http.createServer`'s options). */
export interface RequestClasses {
  IncomingMessage: typeof IncomingMessage;
  ServerResponse: typeof ServerResponse;
}

/**
 * Node's request and response classes with express's prototypes (`app.request`,
 * `app.response`) in their chain, so that a direct route (src/http/direct-routes.ts) finds
 * express's methods there already and need not swap each object's prototype: swapping cost
 * ~5 µs a request (issue 27) and leaves V8 a new shape to learn per object. express's own
 * handling sets the prototype as it always does.
 */
function requestClasses(app: express.Express): RequestClasses {
  class AppRequest extends IncomingMessage {}
  class AppResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {}
  Object.setPrototypeOf(AppRequest.prototype, app.request);
  Object.setPrototypeOf(AppResponse.prototype, app.response);
  return { IncomingMessage: AppRequest, ServerResponse: AppResponse };
}

type GraphQLTransports = { http: RequestHandler; upgrade(req: Request, socket: Duplex, head: Buffer): void };
type LoadedGraphQL = GraphQLTransports & { warmUp(): Promise<void> };

/**
 * /graphql over HTTP and WebSocket, with graphql-yoga and the schema imported on its first
 * request (either transport), or by `warm()`, which the server calls once it is listening:
 * start-up does not wait for it (~0.5 s), and a first GraphQL request that comes after it
 * finds everything ready (issue 27). Requests arriving meanwhile share the one import; if it
 * fails, they get the error handler's 500 (a WebSocket upgrade: the socket closed) and the
 * next request tries again.
 */
function lazyGraphql(
  ctx: DomainContext,
  logger: Logger,
  authenticateSocket: (req: Request, payload: Record<string, unknown>) => Promise<Auth>,
): GraphQLTransports & { warm(): void } {
  let transports: Promise<LoadedGraphQL> | undefined;
  const load = () => {
    if (!transports) {
      const loading = import("./graphql/yoga.js").then(({ graphqlTransports }) => graphqlTransports(ctx, logger, authenticateSocket));
      loading.catch(() => {
        if (transports === loading) transports = undefined;
      });
      transports = loading;
    }
    return transports;
  };
  return {
    http: (req, res, next) => {
      load()
        .then((graphql) => graphql.http(req, res, next))
        .catch(next);
    },
    upgrade: (req, socket, head) => {
      load()
        .then((graphql) => graphql.upgrade(req, socket, head))
        .catch((error: unknown) => {
          logger.error("graphql failed to load", { error: String((error as Error)?.stack ?? error) });
          socket.destroy();
        });
    },
    warm: () => {
      const started = performance.now();
      load().then(
        async (graphql) => {
          const loaded = Math.round(performance.now() - started);
          const warmUp = await graphql.warmUp().then(
            () => "ok",
            (err: unknown) => (logger.error("graphql warm-up query failed", { error: String(err) }), "failed"),
          );
          logger.info("graphql loaded", { ms: loaded, warmUp, warmUpMs: Math.round(performance.now() - started) - loaded });
        },
        // Not the process's end: the first request tries again, and answers 500 if it must.
        (err: unknown) => logger.error("graphql warm-up failed", { error: String(err) }),
      );
    },
  };
}
