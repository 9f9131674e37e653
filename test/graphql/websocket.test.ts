/**
 * GraphQL subscriptions over WebSocket (issue 28, SPEC §12), with the client libraries
 * people use: graphql-ws's own client, Apollo Client's GraphQLWsLink and urql's
 * subscriptionExchange, against the real server. Credentials go in `connection_init`;
 * the same permissions and limits as HTTP apply; a connection ends when its credentials
 * stop holding. Apollo's multipart HTTP subscriptions get a 406 that names what works.
 */
import { ApolloClient, gql, HttpLink, InMemoryCache } from "@apollo/client";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { Client as UrqlClient, subscriptionExchange } from "@urql/core";
import { createClient, type Client } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { buildCard, buildSharedTree, buildTree, buildUser, shareTree, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
const clients: Client[] = [];

beforeAll(async () => {
  server = await startInProcessServer({ LIVE_STREAMS_PER_USER: "3" });
  // GraphQL is loaded on first use; a second or more under load, longer than a poll waits.
  await fetch(`${server.url}/graphql`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"query":"{ __typename }"}' });
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.dispose()));
  await server.stop();
});

const TREE_CHANGED = `subscription ($t: ID!, $since: Int) { treeChanged(treeId: $t, since: $since) { revision kind cards { content } deleted } }`;

interface Closed {
  code: number;
  reason: string;
}

/** A graphql-ws client sending `params` in connection_init, and `headers` with the upgrade (a browser's cookie). */
function wsClient(params: Record<string, unknown> = {}, headers: Record<string, string> = {}): Client & { closed: Promise<Closed> } {
  let closed!: (event: Closed) => void;
  const closedOnce = new Promise<Closed>((resolve) => (closed = resolve));
  class WithHeaders extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { headers });
    }
  }
  const client = createClient({
    url: `${server.url.replace("http", "ws")}/graphql`,
    webSocketImpl: WithHeaders,
    connectionParams: params,
    retryAttempts: 0,
    lazy: false,
    on: { closed: (event) => closed({ code: (event as CloseEvent).code, reason: String((event as CloseEvent).reason) }) },
    onNonLazyError: () => undefined,
  });
  clients.push(client);
  return Object.assign(client, { closed: closedOnce });
}

interface Subscription {
  events: any[];
  errors: unknown[];
  completed: boolean;
  stop(): void;
}

function subscribe(client: Client, query: string, variables: Record<string, unknown>): Subscription {
  const sub: Subscription = { events: [], errors: [], completed: false, stop: () => undefined };
  sub.stop = client.subscribe(
    { query, variables },
    {
      next: (value) => sub.events.push(value),
      error: (error) => sub.errors.push(error),
      complete: () => (sub.completed = true),
    },
  );
  return sub;
}

function basic(api: Api): Record<string, string> {
  return { Authorization: api.authHeader! };
}

async function logIn(api: Api & { user: any }): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${server.url}/api/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: api.user.email, password: api.credentials!.password }),
  });
  expect(res.status).toBe(200);
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith("cardtree_session="))!.split(";")[0];
  return { cookie, csrf: (await res.json()).csrf };
}

/** The change events' card contents. */
const contents = (sub: Subscription) => sub.events.map((event) => event.data?.treeChanged.cards.map((card: any) => card.content)).flat();

describe("graphql-ws's client", () => {
  it("follows a private tree with basic credentials; another user gets not_found, as over HTTP", async () => {
    const { alice, tree } = await buildSharedTree(server.url);
    const mallory = await buildUser(server.url, "mallory");
    const aliceSub = subscribe(wsClient(basic(alice)), TREE_CHANGED, { t: tree._id, since: tree.revision });
    const mallorySub = subscribe(wsClient(basic(mallory)), TREE_CHANGED, { t: tree._id });
    await buildCard(alice, tree._id, { content: "over the socket" });
    await expect.poll(() => contents(aliceSub)).toContain("over the socket");
    await expect.poll(() => mallorySub.events.length + mallorySub.errors.length).toBeGreaterThan(0);
    expect(mallorySub.events[0]?.errors?.map((e: any) => e.extensions.code)).toEqual(["not_found"]);
    expect(mallorySub.events[0]?.data ?? null).toBeNull();
  });

  it("lets an anonymous connection follow a public tree only", async () => {
    const owner = await buildUser(server.url, "publisher");
    const open = await buildTree(owner, { name: "open", seed: "# one" });
    const closed = await buildTree(owner, { name: "closed", seed: "# one" });
    expect((await owner.put(`/api/trees/${open._id}`, { publicUrl: `open-${open._id}` })).status).toBe(200);
    const anonymous = wsClient();
    const openSub = subscribe(anonymous, TREE_CHANGED, { t: open._id, since: open.revision });
    const closedSub = subscribe(anonymous, TREE_CHANGED, { t: closed._id });
    await buildCard(owner, open._id, { content: "for everyone" });
    await expect.poll(() => contents(openSub)).toContain("for everyone");
    await expect.poll(() => closedSub.events.length).toBe(1);
    expect(closedSub.events[0].errors.map((e: any) => e.extensions.code)).toEqual(["unauthenticated"]);
  });

  it("closes with 4401 for a wrong password and 4403 for a session cookie without its CSRF token", async () => {
    const alice = await buildUser(server.url, "alice");
    const wrong = wsClient({ Authorization: `Basic ${Buffer.from(`${alice.user.email}:not the password`).toString("base64")}` });
    expect(await wrong.closed).toMatchObject({ code: 4401, reason: expect.stringMatching(/email or password is wrong/) });
    const session = await logIn(alice);
    const noToken = wsClient({}, { cookie: session.cookie });
    expect(await noToken.closed).toMatchObject({ code: 4403, reason: expect.stringMatching(/X-CSRF-Token/) });
    const wrongToken = wsClient({ "X-CSRF-Token": "x".repeat(32) }, { cookie: session.cookie });
    expect((await wrongToken.closed).code).toBe(4403);
  });

  it("follows with the session cookie and its CSRF token, and closes with 4401 when that session logs out", async () => {
    const alice = await buildUser(server.url, "alice");
    const tree = await buildTree(alice, { seed: "# root" });
    const leaving = await logIn(alice);
    const staying = await logIn(alice);
    const leavingClient = wsClient({ headers: { "x-csrf-token": leaving.csrf } }, { cookie: leaving.cookie });
    const leavingSub = subscribe(leavingClient, TREE_CHANGED, { t: tree._id, since: tree.revision });
    const stayingSub = subscribe(wsClient({ "X-CSRF-Token": staying.csrf }, { cookie: staying.cookie }), TREE_CHANGED, { t: tree._id, since: tree.revision });
    await buildCard(alice, tree._id, { content: "before" });
    await expect.poll(() => contents(leavingSub)).toEqual(["before"]);

    const out = await fetch(`${server.url}/api/logout`, { method: "POST", headers: { cookie: leaving.cookie, "x-csrf-token": leaving.csrf } });
    expect(out.status).toBe(204);
    expect(await leavingClient.closed).toMatchObject({ code: 4401, reason: expect.stringMatching(/Signed out/) });
    await buildCard(alice, tree._id, { content: "after" });
    await expect.poll(() => contents(stayingSub)).toEqual(["before", "after"]);
    expect(contents(leavingSub)).toEqual(["before"]);
  });

  it("closes every basic-credentials connection of a user whose password changes", async () => {
    const alice = await buildUser(server.url, "alice");
    const other = await buildUser(server.url, "other");
    const aliceClient = wsClient(basic(alice));
    const otherClient = wsClient(basic(other));
    const tree = await buildTree(alice, { seed: "# root" });
    const otherTree = await buildTree(other, { seed: "# root" });
    subscribe(aliceClient, TREE_CHANGED, { t: tree._id });
    const otherSub = subscribe(otherClient, TREE_CHANGED, { t: otherTree._id, since: otherTree.revision });
    const changed = await alice.put("/api/index", { currentPassword: alice.credentials!.password, newPassword: "another good password" });
    expect(changed.status).toBe(200);
    expect((await aliceClient.closed).code).toBe(4401);
    await buildCard(other, otherTree._id, { content: "still here" });
    await expect.poll(() => contents(otherSub)).toEqual(["still here"]);
  });

  it("completes the subscription of a collaborator the owner removes, as SSE ends", async () => {
    const { alice, bob, tree } = await buildSharedTree(server.url);
    const bobSub = subscribe(wsClient(basic(bob)), TREE_CHANGED, { t: tree._id, since: tree.revision });
    await buildCard(alice, tree._id, { content: "shared" });
    await expect.poll(() => contents(bobSub)).toContain("shared");
    expect((await alice.delete(`/api/trees/${tree._id}/collaborators/${bob.user._id}`)).status).toBe(204);
    await expect.poll(() => bobSub.completed).toBe(true);
    await buildCard(alice, tree._id, { content: "private again" });
    await shareTree(alice, tree._id, bob);
    expect(contents(bobSub)).not.toContain("private again");
  });

  it("applies HTTP's limits: streams per user, the document's depth, and only subscriptions", async () => {
    const alice = await buildUser(server.url, "limited");
    const tree = await buildTree(alice, { seed: "# root" });
    const client = wsClient(basic(alice));
    const held = [1, 2, 3].map(() => subscribe(client, TREE_CHANGED, { t: tree._id, since: tree.revision }));
    await buildCard(alice, tree._id, { content: "all three see this" });
    await expect.poll(() => held.map((sub) => sub.events.length)).toEqual([1, 1, 1]);
    const fourth = subscribe(client, TREE_CHANGED, { t: tree._id });
    await expect.poll(() => fourth.events.length).toBe(1);
    expect(fourth.events[0].errors.map((e: any) => e.extensions.code)).toEqual(["too_many_requests"]);
    held[0].stop();
    const again = subscribe(client, TREE_CHANGED, { t: tree._id, since: tree.revision });
    await expect.poll(() => contents(again)).toContain("all three see this");

    const deep = `subscription ($t: ID!) { treeChanged(treeId: $t) { cards { ${"children { ".repeat(20)}id${" }".repeat(20)} } } }`;
    const tooDeep = subscribe(client, deep, { t: tree._id });
    await expect.poll(() => tooDeep.events.length + tooDeep.errors.length).toBeGreaterThan(0);
    expect(JSON.stringify(tooDeep.events[0] ?? tooDeep.errors[0])).toMatch(/depth limit/i);

    const query = subscribe(client, "{ me { email } }", {});
    await expect.poll(() => query.errors.length).toBe(1);
    expect(JSON.stringify(query.errors[0])).toMatch(/Only subscriptions are served over WebSocket/);
    const mutation = subscribe(client, `mutation { createTree(input: { name: "over ws" }) { id } }`, {});
    await expect.poll(() => mutation.errors.length).toBe(1);
    expect((await alice.get("/api/trees")).body.map((t: any) => t.name)).not.toContain("over ws");
  });
});

describe("Apollo Client and urql", () => {
  it("Apollo's GraphQLWsLink receives a tree's changes", async () => {
    const alice = await buildUser(server.url, "apollo");
    const tree = await buildTree(alice, { seed: "# root" });
    const apollo = new ApolloClient({ link: new GraphQLWsLink(wsClient(basic(alice))), cache: new InMemoryCache() });
    const received: string[] = [];
    const subscription = apollo.subscribe({ query: gql(TREE_CHANGED), variables: { t: tree._id, since: tree.revision } }).subscribe({
      next: (result) => received.push(...(result.data as any).treeChanged.cards.map((card: any) => card.content)),
    });
    await buildCard(alice, tree._id, { content: "to apollo" });
    await expect.poll(() => received).toEqual(["to apollo"]);
    subscription.unsubscribe();
  });

  it("urql's subscriptionExchange over graphql-ws receives a tree's changes", async () => {
    const alice = await buildUser(server.url, "urql");
    const tree = await buildTree(alice, { seed: "# root" });
    const socket = wsClient(basic(alice));
    const urql = new UrqlClient({
      url: `${server.url}/graphql`,
      exchanges: [
        subscriptionExchange({
          forwardSubscription: (request) => ({
            subscribe: (sink) => ({ unsubscribe: socket.subscribe({ ...request, query: request.query ?? "" }, sink) }),
          }),
        }),
      ],
    });
    const received: string[] = [];
    const { unsubscribe } = urql.subscription(TREE_CHANGED, { t: tree._id, since: tree.revision }).subscribe((result) => {
      received.push(...(result.data as any).treeChanged.cards.map((card: any) => card.content));
    });
    await buildCard(alice, tree._id, { content: "to urql" });
    await expect.poll(() => received).toEqual(["to urql"]);
    unsubscribe();
  });

  it("Apollo's multipart HTTP subscription gets a 406 whose body names the transports that work", async () => {
    const alice = await buildUser(server.url, "multipart");
    const tree = await buildTree(alice, { seed: "# root" });
    const apollo = new ApolloClient({
      link: new HttpLink({ uri: `${server.url}/graphql`, headers: { authorization: alice.authHeader! } }),
      cache: new InMemoryCache(),
    });
    const error = await new Promise<any>((resolve) => {
      apollo.subscribe({ query: gql(TREE_CHANGED), variables: { t: tree._id } }).subscribe({
        next: (result) => resolve(result.error),
        error: resolve,
      });
    });
    expect(error.statusCode).toBe(406);
    expect(error.bodyText).toMatch(/WebSocket/);
    expect(error.bodyText).toMatch(/GraphQLWsLink/);
    expect(error.bodyText).toMatch(/text\/event-stream/);
  });
});
