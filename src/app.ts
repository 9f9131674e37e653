/**
 * The express application: security headers and request logs, then who is calling
 * (shared by /api, /graphql and the print view), the REST facade, GraphQL, the health
 * check, the print view and the browser client. Built here and listened on in server.ts,
 * so tests can build it too.
 */
import { compressResponses } from "./http/compression.js";
import express, { type RequestHandler } from "express";
import { authenticate } from "./auth/middleware.js";
import { CredentialChecker } from "./auth/credentials.js";
import { SessionManager } from "./auth/sessions.js";
import type { DomainContext } from "./domain/context.js";
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

export function createApp({ ctx, secret, logger, webDir, lifecycle = () => "ready", probeStore, noticesHeard }: AppDeps): express.Express & { warmGraphql(): void } {
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", ctx.config.trustProxy);
  app.set("etag", false);

  const credentials = new CredentialChecker(ctx, secret);
  // A password change checks the current password as a log-in attempt, with this throttle.
  ctx.loginAttempts = credentials;
  const sessions = new SessionManager(ctx.store, secret, (sessionId) => ctx.live.signedOut({ sessionId }), ctx.config.sessions.ttlMs);
  const who = authenticate({ store: ctx.store, credentials, sessions });

  app.use(securityHeaders(ctx.config.remoteImages));
  app.use(compressResponses());
  app.use(closeConnectionsWhenStopping(lifecycle));
  if (ctx.config.logRequests) app.use(requestLog(logger));
  app.use(healthRoutes(ctx.store, lifecycle, probeStore, noticesHeard));
  app.use(
    "/api",
    who,
    restApi({
      ctx,
      credentials,
      sessions,
      logger,
      jsonLimit: jsonBody(ctx.config.limits.jsonBodyBytes),
      importLimit: jsonBody(ctx.config.limits.importBodyBytes),
    }),
  );
  const graphql = lazyGraphql(ctx, logger);
  app.use("/graphql", who, graphql);
  app.use(printPage(ctx, who));
  app.use(webClient(webDir, ctx.config.remoteImages));
  app.use(errorHandler(logger));
  return Object.assign(app, { warmGraphql: graphql.warm });
}

/**
 * /graphql, with graphql-yoga and the schema imported on its first request, or by `warm()`,
 * which the server calls once it is listening: start-up does not wait for it (~0.5 s), and
 * a first GraphQL request that comes after it finds everything ready (issue 27). Requests
 * arriving meanwhile share the one import; if it fails, they get the error handler's 500
 * and the next request tries again.
 */
function lazyGraphql(ctx: DomainContext, logger: Logger): RequestHandler & { warm(): void } {
  let handler: Promise<RequestHandler> | undefined;
  const load = () => {
    if (!handler) {
      const loading = import("./graphql/yoga.js").then(({ graphqlHandler }) => graphqlHandler(ctx, logger));
      loading.catch(() => {
        if (handler === loading) handler = undefined;
      });
      handler = loading;
    }
    return handler;
  };
  const serve: RequestHandler = (req, res, next) => {
    load()
      .then((graphql) => graphql(req, res, next))
      .catch(next);
  };
  return Object.assign(serve, {
    warm: () => {
      const started = performance.now();
      load().then(
        () => logger.info("graphql loaded", { ms: Math.round(performance.now() - started) }),
        // Not the process's end: the first request tries again, and answers 500 if it must.
        (err: unknown) => logger.error("graphql warm-up failed", { error: String(err) }),
      );
    },
  });
}
