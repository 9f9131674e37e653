/**
 * A request whose `Accept` names nothing /graphql answers in gets 406. Yoga sends it with an
 * empty body; this says which transports work, so that a client sending, say, Apollo's
 * multipart HTTP subscriptions (`Accept: multipart/mixed;subscriptionSpec=1.0`, which yoga
 * does not serve for subscriptions) learns what to use instead: GraphQL over WebSocket
 * (websocket.ts) or Server-Sent Events.
 */
import type { Plugin } from "graphql-yoga";

export const TRANSPORTS = [
  "application/graphql-response+json or application/json: queries and mutations (POST /graphql)",
  "text/event-stream: subscriptions as Server-Sent Events (POST /graphql with Accept: text/event-stream)",
  "WebSocket, graphql-ws protocol (subprotocol graphql-transport-ws) on /graphql: subscriptions (Apollo GraphQLWsLink, urql subscriptionExchange with graphql-ws)",
];

const MESSAGE =
  "Nothing this server sends matches the Accept header. Multipart HTTP subscriptions (multipart/mixed) are not served: " +
  "subscribe over WebSocket (graphql-ws protocol on /graphql; Apollo: GraphQLWsLink) or Server-Sent Events (Accept: text/event-stream).";

export const subscriptionTransports: Plugin = {
  onResponse({ response, setResponse, fetchAPI }) {
    if (response.status !== 406) return;
    const body = JSON.stringify({ errors: [{ message: MESSAGE, extensions: { code: "invalid_request", transports: TRANSPORTS } }] });
    const headers = new fetchAPI.Headers(response.headers);
    headers.set("Content-Type", "application/json; charset=utf-8");
    setResponse(new fetchAPI.Response(body, { status: 406, headers }));
  },
};
