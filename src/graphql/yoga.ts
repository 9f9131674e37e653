/**
 * /graphql: the Pothos schema served by graphql-yoga behind the same authentication
 * middleware as /api (mounted in src/app.ts), plus GraphiQL on GET.
 *
 * Settings that matter and why:
 * - CORS off. Yoga's default reflects any Origin and allows credentials, which would let
 *   any web page read a signed-in visitor's trees (and `me { csrf }`) with their cookie.
 * - Request bodies go through the same JSON body parser as /api, at the import limit (an
 *   `importSeed` may carry up to that): too large is 413, not JSON is 415, before yoga.
 * - Mutations over GET are refused by yoga, so a cookie-session change is always a POST, and
 *   the middleware has checked its CSRF token.
 * - Errors are masked by src/graphql/errors.ts (codes in `extensions.code`).
 * - What one request may cost is bounded three times over: the document (tokens, aliases,
 *   directives, introspection: document-limits.ts), the operation with its variables
 *   (depth, cost, mutations, import totals: operation-limits.ts; the answer against the
 *   trees it reads: answer-bound.ts), and what execution resolves and how long it runs
 *   (result-budget.ts, charged at one point), and for anonymous callers how much of the
 *   event loop one address's executions take over time (execution-allowance.ts). Which
 *   module owns which guarantee: docs/architecture.md; the defaults are in src/config.ts,
 *   the reasons in docs/graphql.md.
 * - Whole-tree query responses are kept, as bytes, per tree revision
 *   (src/graphql/result-cache.ts).
 */
import { EventEmitter } from "node:events";
import { Router, type Request, type RequestHandler, type Response } from "express";
import { createYoga, type Plugin } from "graphql-yoga";
import { clientAddress } from "../auth/middleware.js";
import type { DomainContext } from "../domain/context.js";
import { NotFoundError } from "../shared/errors.js";
import { jsonBody } from "../http/json-body.js";
import type { Logger } from "../http/logger.js";
import { cardListsPlugin } from "./card-lists.js";
import { createGraphQLContext, type GraphQLContext } from "./context.js";
import { documentLimits } from "./document-limits.js";
import { documentErrorCodes, maskError } from "./errors.js";
import { ExecutionAllowance, executionAllowancePlugin } from "./execution-allowance.js";
import { graphiqlRoutes, renderGraphiQLPage } from "./graphiql.js";
import { idempotentMutations } from "./idempotency.js";
import { operationLimits } from "./operation-limits.js";
import { resultBudgetPlugin } from "./result-budget.js";
import { changeRevisionsPlugin } from "./change-revisions.js";
import { cachedAnswerTo, ResultCache, resultCachePlugin } from "./result-cache.js";
import { cachedBodies, sendCompressible } from "../http/compression.js";
import { schema } from "./schema.js";
import { subscriptionTransports } from "./subscription-transports.js";
import { graphqlWebSocket, type WebSocketDeps } from "./websocket.js";

interface ServerContext {
  req: Request;
  res: Response;
}

const EXAMPLE_QUERY = `# A whole tree in one request. Try: { trees { id name } } first.
query WholeTree($id: ID!) {
  tree(id: $id) {
    name
    roots {
      ...CardFields
      children {
        ...CardFields
        children { ...CardFields }
      }
    }
  }
}

fragment CardFields on Card {
  id
  depth
  content
}
`;

/**
 * Subscriptions come back as Server-Sent Events (yoga's own framing): like REST's event
 * streams, never stored and never buffered by a proxy.
 */
const eventStreamHeaders: Plugin = {
  onResponse({ response }) {
    if (!response.headers.get("content-type")?.startsWith("text/event-stream")) return;
    response.headers.set("Cache-Control", "no-store");
    response.headers.set("X-Accel-Buffering", "no");
  },
};

function csrfHeader(req: Request): Record<string, string> {
  return req.auth.session ? { "X-CSRF-Token": req.auth.session.csrf } : {};
}

export function createGraphQLServer(ctx: DomainContext, logger: Logger, cache = new ResultCache(ctx.treeRevisions)) {
  const anonymous = ctx.config.graphql.anonymous;
  // Each execution takes a whole anonymous time budget while it runs, and the allowance holds
  // one and a half: one execution at a time per address (two back to back would hold the
  // loop twice as long), and cheap queries one after another are never refused.
  const allowance = new ExecutionAllowance({
    perSecondMs: anonymous.perSecondMs,
    reserveMs: anonymous.timeMs,
    burstMs: 1.5 * anonymous.timeMs,
  });
  return createYoga<ServerContext, GraphQLContext>({
    schema,
    graphqlEndpoint: "/graphql",
    context: ({ req }) => createGraphQLContext(ctx, req.auth, clientAddress(req)),
    cors: false,
    landingPage: false,
    logging: false,
    maskedErrors: { maskError: maskError(logger) },
    plugins: [
      documentLimits(ctx.config.graphql),
      operationLimits(ctx.config, ctx.seeds),
      executionAllowancePlugin(allowance),
      resultBudgetPlugin,
      cardListsPlugin(),
      documentErrorCodes,
      resultCachePlugin(cache),
      eventStreamHeaders,
      subscriptionTransports,
      changeRevisionsPlugin,
    ],
    graphiql: (_request, server) => ({
      title: "Cardtree GraphQL",
      endpoint: "/graphql",
      defaultQuery: EXAMPLE_QUERY,
      // A cookie session's POSTs need its CSRF token; GraphiQL sends it without showing it.
      additionalHeaders: csrfHeader(server.req),
    }),
    renderGraphiQL: renderGraphiQLPage,
  });
}

export function graphqlHandler(
  ctx: DomainContext,
  logger: Logger,
  cache = new ResultCache(ctx.treeRevisions),
  yoga = createGraphQLServer(ctx, logger, cache),
): RequestHandler {
  const router = Router();
  router.use(graphiqlRoutes());
  router.use(jsonBody(ctx.config.limits.importBodyBytes));
  router.use(idempotentMutations(ctx, logger));
  router.all("/", (req, res) => {
    // A current cached answer is sent as REST sends its cached bodies: one buffer.
    const hit = cachedAnswerTo(cache, req);
    if (hit) {
      // Compressed once per cached result, as REST's bodies are (src/http/compression.ts).
      res.status(200).set("Content-Type", hit.contentType);
      return sendCompressible(req, res, [hit.body], null, cachedBodies);
    }
    return yoga.requestListener(req, res);
  });
  router.use(() => {
    throw new NotFoundError("This GraphQL path");
  });
  return router;
}

/**
 * /graphql over HTTP and over WebSocket (websocket.ts), from one yoga instance: one parse
 * and validation cache, one set of limits.
 */
export function graphqlTransports(ctx: DomainContext, logger: Logger, authenticate: WebSocketDeps["authenticate"]) {
  const cache = new ResultCache(ctx.treeRevisions);
  const yoga = createGraphQLServer(ctx, logger, cache);
  return {
    /**
     * One anonymous `{ __typename }` through the whole pipeline (plugins, parse, validation,
     * execution), answered to nobody: the first run of that code costs about 50 ms, which the
     * first client's request paid (issue 27). Its outcome does not matter.
     */
    async warmUp(): Promise<void> {
      // What the context and the plugins read of express's request and response, for an
      // anonymous caller (the result cache waits for the response's "close"). Its address is
      // no client's, so it takes nothing from a real one's anonymous allowance.
      const req = { auth: { user: null, session: null }, ip: "warm-up", socket: {}, headers: {}, method: "POST" } as unknown as Request;
      const res = new EventEmitter() as unknown as Response;
      const init = { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify({ query: "{ __typename }" }) };
      try {
        const answer = (await (await yoga.fetch(new URL("http://localhost/graphql"), init, { req, res })).json()) as { data?: unknown; errors?: unknown[] };
        if (answer.errors?.length) throw new Error(`the warm-up query answered errors: ${JSON.stringify(answer.errors)}`);
      } finally {
        res.emit("close");
      }
    },
    http: graphqlHandler(ctx, logger, cache, yoga),
    upgrade: graphqlWebSocket({
      yoga,
      live: ctx.live,
      authenticate,
      maxPayloadBytes: ctx.config.limits.jsonBodyBytes,
      heartbeatMs: ctx.config.live.heartbeatMs,
      bufferBytes: ctx.config.live.bufferBytes,
      logger,
    }),
  };
}
