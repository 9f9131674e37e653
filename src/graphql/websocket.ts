/**
 * GraphQL subscriptions over WebSocket on /graphql, in the graphql-ws protocol (subprotocol
 * `graphql-transport-ws`, what graphql-ws's client, Apollo's `GraphQLWsLink` and urql's
 * `subscriptionExchange` with graphql-ws speak), beside the Server-Sent Events yoga serves
 * on the same path (docs/graphql.md, "Subscriptions").
 *
 * - Who is calling is settled once, at `connection_init` (src/auth/connection-auth.ts):
 *   basic credentials, or the session cookie with its CSRF token. Wrong credentials close
 *   the socket with 4401, a cookie without its token with 4403, the log-in throttle with
 *   1013 (try again later).
 * - Each subscription runs through the same yoga instance as HTTP (`getEnveloped`): the
 *   document and operation limits, the result budget, error masking; its stream is the
 *   domain's (src/domain/live.ts), with the same permissions and stream limits as SSE.
 *   A stream cut off (access revoked, the tree deleted, signed out) completes.
 * - Only subscriptions: a query or mutation is answered with an error naming HTTP. Queries'
 *   card lists and cached answers are written into the HTTP response itself
 *   (card-lists.ts, result-cache.ts), which a WebSocket message does not have.
 * - The connection ends with its credentials (`LiveStreams.join`, as every stream does): at
 *   sign-out, its session's expiry, a password change elsewhere (in any process) or the
 *   account's removal it closes with 4401, which graphql-ws's client does not retry; when
 *   the server stops, with 1001.
 * - Bounded like an HTTP request and an SSE reader: a message over the JSON body limit
 *   closes with 1009, `connection_init` must come within 3 s, a reader that leaves more
 *   than the SSE buffer limit unread is dropped (1013: reconnect and resume with `since`),
 *   and pings on the SSE heartbeat find dead peers.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Request } from "express";
import { getOperationAST, GraphQLError, type ExecutionArgs, type ExecutionResult } from "graphql";
import { useServer } from "graphql-ws/use/ws";
import { WebSocketServer, type WebSocket } from "ws";
import type { YogaServerInstance } from "graphql-yoga";
import type { Auth } from "../auth/middleware.js";
import { accessOf, type LiveStreams } from "../domain/live.js";
import { DomainError, TooManyRequestsError } from "../shared/errors.js";
import type { Logger } from "../http/logger.js";
import type { GraphQLContext } from "./context.js";

/** The yoga instance's server context: the express request carries `auth`. */
interface ServerContext {
  req: Request;
}

export interface WebSocketDeps {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  yoga: YogaServerInstance<any, GraphQLContext>;
  live: LiveStreams;
  /** @throws DomainError when the payload's credentials do not hold (connection-auth.ts). */
  authenticate(req: Request, payload: Record<string, unknown>): Promise<Auth>;
  /** Largest message taken (the JSON body limit). */
  maxPayloadBytes: number;
  /** Between two pings. */
  heartbeatMs: number;
  /** Bytes a reader may leave unread before it is dropped. */
  bufferBytes: number;
  logger: Logger;
}

/** What each connection keeps once initialised. */
interface ConnectionState {
  auth?: Auth;
  release?: () => void;
  [key: PropertyKey]: unknown;
}

/** Close codes: graphql-ws's client retries 1001 and 1013, never 4401. */
const CLOSE = { goingAway: 1001, tryAgainLater: 1013, unauthorized: 4401, forbidden: 4403, internal: 4500 } as const;

const ONLY_SUBSCRIPTIONS =
  "Only subscriptions are served over WebSocket; send queries and mutations as HTTP POST /graphql.";

/** A close reason is at most 123 bytes. */
function closeReason(text: string): string {
  const bytes = Buffer.from(text);
  return bytes.length <= 123 ? text : `${bytes.subarray(0, 120).toString("utf8").replace(/\uFFFD$/, "")}...`;
}

function codedError(message: string, code: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}

/**
 * The upgrade handler for the HTTP server: `req` is an express request (its prototype set,
 * so `req.ip` respects TRUST_PROXY). Paths other than /graphql are refused with 404.
 */
export function graphqlWebSocket(deps: WebSocketDeps): (req: Request, socket: Duplex, head: Buffer) => void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: deps.maxPayloadBytes });

  const refuse = (socket: WebSocket, error: unknown) => {
    if (error instanceof DomainError) {
      const retry = error instanceof TooManyRequestsError ? ` Retry after ${error.retryAfterSeconds} s.` : "";
      const code = error.code === "unauthenticated" ? CLOSE.unauthorized : error.code === "too_many_requests" ? CLOSE.tryAgainLater : CLOSE.forbidden;
      socket.close(code, closeReason(`${error.message}${retry}`));
      return;
    }
    deps.logger.error("graphql websocket connection failed", { error: String((error as Error)?.stack ?? error) });
    socket.close(CLOSE.internal, "Internal server error");
  };

  useServer<Record<string, unknown>, ConnectionState>(
    {
      isProd: true,
      onConnect: async (ctx) => {
        const { socket } = ctx.extra;
        const req = ctx.extra.request as Request;
        try {
          const auth = await deps.authenticate(req, ctx.connectionParams ?? {});
          req.auth = auth;
          ctx.extra.auth = auth;
        } catch (error) {
          refuse(socket, error);
          return false;
        }
        if (socket.readyState !== socket.OPEN) return false;
        const auth = ctx.extra.auth!;
        ctx.extra.release = deps.live.join({
          access: accessOf(auth.user, auth.session),
          end: (reason) => {
            if (reason === "stopping") socket.close(CLOSE.goingAway, "The server is stopping");
            else if (reason === "expired") socket.close(CLOSE.unauthorized, "Signed out: the session expired");
            else socket.close(CLOSE.unauthorized, "Signed out: the credentials of this connection no longer hold");
          },
        });
        return true;
      },
      onClose: (ctx) => ctx.extra.release?.(),
      onSubscribe: async (ctx, _id, payload) => {
        const req = ctx.extra.request as Request;
        const enveloped = deps.yoga.getEnveloped({ req, params: payload } as unknown as ServerContext);
        let document;
        try {
          document = enveloped.parse(payload.query);
        } catch (error) {
          const parseError = error instanceof GraphQLError ? error : new GraphQLError(String(error));
          parseError.extensions.code ??= "invalid_request";
          return [parseError];
        }
        const errors = enveloped.validate(enveloped.schema, document);
        if (errors.length > 0) return errors;
        if (getOperationAST(document, payload.operationName)?.operation !== "subscription") {
          return [codedError(ONLY_SUBSCRIPTIONS, "invalid_request")];
        }
        const contextValue = await enveloped.contextFactory();
        return {
          schema: enveloped.schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue,
          rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe },
        } satisfies ExecutionArgs;
      },
      execute: (args) => (args.rootValue as { execute: (args: ExecutionArgs) => Promise<ExecutionResult> }).execute(args),
      subscribe: (args) => (args.rootValue as { subscribe: (args: ExecutionArgs) => Promise<ExecutionResult> }).subscribe(args),
      onNext: (ctx) => {
        const { socket } = ctx.extra;
        // Like an SSE reader that does not read: dropped rather than buffered without bound.
        if (socket.bufferedAmount > deps.bufferBytes) socket.close(CLOSE.tryAgainLater, "Too slow: reconnect and resume with since");
      },
    },
    wss,
    deps.heartbeatMs,
  );

  return (req, socket, head) => {
    const path = (req as IncomingMessage).url?.split("?")[0];
    if (path !== "/graphql") {
      socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit("connection", ws, req));
  };
}
