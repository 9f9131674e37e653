/**
 * Live changes over real HTTP (SPEC §10): `GET /api/trees/:id/events` as Server-Sent
 * Events and the GraphQL `treeChanged` subscription over yoga's SSE. What a reader sees:
 * another user's change within a second, a resume with no gap and no duplicate, `reset`
 * when too far behind, who may follow (SPEC §3), a collaborator cut off when removed, a
 * slow reader dropped while writes go on, the stream limits, and bad input refused.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser, shareTree } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { permissionFixture, ROLES, signUpPeople, type People, type Role } from "../helpers/permission-fixture.js";
import { SseReader } from "./sse-client.js";

const MAX_BACKLOG = 20;
let server: InProcessServer;
let owner: Api & { user: any };
let friend: Api & { user: any };
let people: People;

beforeAll(async () => {
  server = await startInProcessServer({
    LIVE_MAX_BACKLOG: String(MAX_BACKLOG),
    LIVE_BUFFER_BYTES: "4096",
    LIVE_STREAMS_PER_ADDRESS: "3",
    LIVE_HEARTBEAT_MS: "200",
  });
  owner = await buildUser(server.url, "owner");
  friend = await buildUser(server.url, "friend");
  people = await signUpPeople(server.url);
});
afterAll(() => server.stop());

function auth(api: Api): Record<string, string> {
  return api.authHeader ? { authorization: api.authHeader } : {};
}

function follow(as: Api, treeId: string, headers: Record<string, string> = {}, query = ""): Promise<SseReader> {
  return SseReader.open(server.url, `/api/trees/${treeId}/events${query}`, { ...auth(as), ...headers });
}

async function sharedTree(): Promise<any> {
  const tree = await buildTree(owner, { name: "Live", seed: "# Root" });
  await shareTree(owner, tree._id, friend);
  return (await owner.get("/api/trees")).body.find((t: any) => t._id === tree._id);
}

describe("GET /api/trees/:id/events", () => {
  it("delivers a change another user made within a second, as a presented card", async () => {
    const tree = await sharedTree();
    const stream = await follow(owner, tree._id);
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(stream.headers.get("cache-control")).toBe("no-store");
    expect(stream.headers.get("x-accel-buffering")).toBe("no");

    const started = Date.now();
    const card = await buildCard(friend, tree._id, { content: "from a friend", position: 5 });
    const [event] = await stream.waitFor(1, "change", 1000);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(event).toMatchObject({ revision: tree.revision + 1, kind: "card.create", userId: friend.user._id, deleted: [] });
    expect(event.cards).toEqual([card]);
    expect(Object.keys(event.cards[0])).not.toContain("author");
    expect(stream.events.at(-1)!.id).toBe(String(tree.revision + 1));

    expect((await friend.delete(`/api/trees/${tree._id}/cards/${card._id}`)).status).toBe(200);
    const [, deletion] = await stream.waitFor(2);
    expect(deletion).toMatchObject({ kind: "card.delete", cards: [], deleted: [card._id] });

    await owner.put(`/api/trees/${tree._id}`, { name: "Renamed live" });
    const [, , rename] = await stream.waitFor(3);
    expect(rename).toMatchObject({ kind: "tree.update", tree: { name: "Renamed live", revision: tree.revision + 3 } });
    stream.close();
  });

  it("sends heartbeats (comment lines) while idle, to every stream", async () => {
    const tree = await buildTree(owner);
    // Several streams: the server beats a slice of its streams at a time, each in turn.
    const texts = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const res = await fetch(`${server.url}/api/trees/${tree._id}/events`, { headers: auth(owner) });
        const reader = res.body!.getReader();
        let text = "";
        const deadline = Date.now() + 3000;
        while (!text.includes(": keep-alive") && Date.now() < deadline) text += new TextDecoder().decode((await reader.read()).value);
        await reader.cancel();
        return text;
      }),
    );
    for (const text of texts) expect(text).toContain(": keep-alive\n\n");
  });

  it("resumes with Last-Event-ID after a dropped connection, with no gap and no duplicate", async () => {
    const tree = await sharedTree();
    const first = await follow(owner, tree._id);
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await buildCard(friend, tree._id, { content: `before ${i}`, position: i + 1 }));
    await first.waitFor(3);
    const lastId = first.events.at(-1)!.id!;
    first.close();

    // Written while nobody listens.
    for (let i = 0; i < 4; i++) await buildCard(friend, tree._id, { content: `while away ${i}`, position: 10 + i });
    // Last-Event-ID wins over a stale ?since (EventSource keeps the URL it opened).
    const again = await follow(owner, tree._id, { "last-event-id": lastId }, "?since=0");
    await buildCard(friend, tree._id, { content: "after", position: 20 });
    const events = await again.waitFor(5);
    expect(events.map((e) => e.revision)).toEqual([1, 2, 3, 4, 5].map((n) => Number(lastId) + n));
    expect(events.map((e) => e.cards[0].content)).toEqual(["while away 0", "while away 1", "while away 2", "while away 3", "after"]);
    again.close();

    // ?since alone replays from there too: every change of the tree, from its creation.
    const all = await follow(owner, tree._id, {}, "?since=0");
    const replay = await all.waitFor(tree.revision + 8);
    expect(replay.map((e) => e.revision)).toEqual(Array.from({ length: tree.revision + 8 }, (_, i) => i + 1));
    expect(replay[0].kind).toBe("tree.create");
    all.close();
  });

  it("sends reset and ends when the reader is too far behind or ahead", async () => {
    const tree = await buildTree(owner);
    for (let i = 0; i < MAX_BACKLOG + 1; i++) await buildCard(owner, tree._id, { content: `${i}`, position: i });
    const behind = await follow(owner, tree._id, {}, "?since=0");
    await behind.waitForEnd();
    expect(behind.data("reset")).toEqual([{ revision: MAX_BACKLOG + 2 }]);
    expect(behind.data("change")).toEqual([]);

    const ahead = await follow(owner, tree._id, { "last-event-id": "999" });
    await ahead.waitForEnd();
    expect(ahead.data("reset")).toEqual([{ revision: MAX_BACKLOG + 2 }]);

    // Within the backlog it replays.
    const near = await follow(owner, tree._id, {}, `?since=${MAX_BACKLOG + 2 - 3}`);
    expect((await near.waitFor(3)).map((e) => e.revision)).toEqual([MAX_BACKLOG, MAX_BACKLOG + 1, MAX_BACKLOG + 2]);
    near.close();
  });

  it("refuses a since or Last-Event-ID that is not a revision with 400, and a bad tree id", async () => {
    const tree = await buildTree(owner);
    for (const query of ["?since=-1", "?since=abc", "?since=1.5", "?since=", "?since=99999999999999999999"]) {
      const res = await follow(owner, tree._id, {}, query);
      expect(res.status, query).toBe(400);
      expect(res.json).toMatchObject({ error: "invalid_request", details: [{ path: "since" }] });
    }
    const header = await follow(owner, tree._id, { "last-event-id": "garbage" });
    expect(header.status).toBe(400);
    expect(header.json.details).toEqual([{ path: "Last-Event-ID", message: "must be a whole number, 0 or more" }]);
    expect((await follow(owner, "not-an-id")).status).toBe(400);
  });

  describe("who may follow (SPEC §3)", () => {
    const expected: Record<"private" | "public", Record<Role, number>> = {
      private: { owner: 200, collaborator: 200, other: 404, anonymous: 401 },
      public: { owner: 200, collaborator: 200, other: 200, anonymous: 200 },
    };
    for (const visibility of ["private", "public"] as const) {
      it(`on a ${visibility} tree`, async () => {
        const fixture = await permissionFixture(server.url, visibility === "public", people);
        for (const role of ROLES) {
          const stream = await follow(fixture.roles[role], fixture.tree._id);
          expect(stream.status, role).toBe(expected[visibility][role]);
          stream.close();
        }
        // A tree that does not exist answers as a private one.
        expect((await follow(people.other, "z".repeat(24))).status).toBe(404);
        expect((await follow(new Api(server.url), "z".repeat(24))).status).toBe(401);
      });
    }
  });

  it("cuts a collaborator off when removed, and every reader when the tree is deleted", async () => {
    const tree = await sharedTree();
    const theirs = await follow(friend, tree._id);
    const mine = await follow(owner, tree._id);
    await buildCard(owner, tree._id, { content: "seen by both" });
    await theirs.waitFor(1);
    expect((await owner.delete(`/api/trees/${tree._id}/collaborators/${friend.user._id}`)).status).toBe(204);
    await theirs.waitForEnd(2000);
    // The change that removed them is not sent to them.
    expect(theirs.data().map((e) => e.kind)).toEqual(["card.create"]);
    await buildCard(owner, tree._id, { content: "owner only" });
    expect((await mine.waitFor(3)).map((e) => e.kind)).toEqual(["card.create", "tree.share", "card.create"]);
    expect((await follow(friend, tree._id)).status).toBe(404);

    expect((await owner.delete(`/api/trees/${tree._id}`)).status).toBe(204);
    await mine.waitForEnd(2000);
  });

  it("a collaborator taken off and given the tree back resumes past the change that removed them", async () => {
    const tree = await sharedTree();
    const first = await follow(friend, tree._id);
    await buildCard(owner, tree._id, { content: "before" });
    const [seen] = await first.waitFor(1);
    first.close();
    expect((await owner.delete(`/api/trees/${tree._id}/collaborators/${friend.user._id}`)).status).toBe(204);
    await buildCard(owner, tree._id, { content: "while away" });
    await shareTree(owner, tree._id, friend);
    await buildCard(owner, tree._id, { content: "back again" });
    // The replay holds the change that took them off; the tree as it is now is theirs again.
    const resumed = await follow(friend, tree._id, { "Last-Event-ID": String(seen.revision) });
    expect(resumed.status).toBe(200);
    const replayed = await resumed.waitFor(4);
    expect(replayed.map((e) => e.kind)).toEqual(["tree.share", "card.create", "tree.share", "card.create"]);
    expect(replayed.map((e) => e.revision)).toEqual([1, 2, 3, 4].map((i) => seen.revision + i));
    await buildCard(owner, tree._id, { content: "live" });
    expect((await resumed.waitFor(5)).at(-1).cards[0].content).toBe("live");
    resumed.close();
  });

  it("unpublishing a public tree cuts off anonymous readers", async () => {
    const tree = await buildTree(owner, { name: "Briefly public" });
    await owner.put(`/api/trees/${tree._id}`, { publicUrl: `live-${tree._id}` });
    const anonymous = await follow(new Api(server.url), tree._id);
    expect(anonymous.status).toBe(200);
    await owner.put(`/api/trees/${tree._id}`, { publicUrl: null });
    await anonymous.waitForEnd(2000);
    expect(anonymous.data()).toEqual([]);
  });

  it("drops a reader that does not read, while writes go on", async () => {
    const tree = await buildTree(owner);
    const before = server.ctx.live.count;
    const { hostname: host, port } = new URL(server.url);
    const socket = net.connect(Number(port), host);
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write(`GET /api/trees/${tree._id}/events HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${owner.authHeader}\r\n\r\n`);
    let closed = false;
    socket.once("close", () => (closed = true));
    await new Promise((resolve) => socket.once("data", resolve));
    socket.pause();
    expect(server.ctx.live.count).toBe(before + 1);

    // About 20 MB of events, far past what the kernel's socket buffers hold.
    const big = "x".repeat(90_000);
    const card = await buildCard(owner, tree._id, { content: big });
    const started = Date.now();
    for (let i = 0; i < 220 && server.ctx.live.count > before; i++) {
      const res = await owner.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: `${i}${big}` });
      expect(res.status).toBe(200);
    }
    expect(server.ctx.live.count).toBe(before);
    // Writes were never held up by the reader: far less than a second each.
    expect(Date.now() - started).toBeLessThan(60_000);
    socket.resume();
    await new Promise<void>((resolve) => (closed ? resolve() : socket.once("close", () => resolve())));
  });

  it("sends well-formed HTTP on the wire: chunks over HTTP/1.1, ended by the last chunk; the events alone over HTTP/1.0", async () => {
    const tree = await buildTree(owner);
    const { hostname: host, port } = new URL(server.url);
    /** A raw connection asking for the stream; resolves with everything it read once `until` holds. */
    const raw = async (treeId: string, version: string, until: (bytes: string) => boolean, whileOpen: () => Promise<void>) => {
      const socket = net.connect(Number(port), host);
      await new Promise((resolve) => socket.once("connect", resolve));
      let bytes = "";
      let closed = false;
      socket.setEncoding("latin1");
      socket.on("data", (chunk: string) => (bytes += chunk));
      socket.once("close", () => (closed = true));
      socket.write(`GET /api/trees/${treeId}/events HTTP/${version}\r\nHost: ${host}\r\nAuthorization: ${owner.authHeader}\r\n\r\n`);
      const deadline = Date.now() + 5000;
      const wait = async (done: () => boolean) => {
        while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      };
      await wait(() => bytes.includes(": open\n\n"));
      await whileOpen();
      await wait(() => until(bytes) || closed);
      socket.destroy();
      const head = bytes.indexOf("\r\n\r\n");
      return { head: bytes.slice(0, head), body: bytes.slice(head + 4), closed };
    };
    const eventsIn = (text: string) => [...text.matchAll(/^id: (\d+)\nevent: change\ndata: (.*)$/gm)].map((m) => ({ id: Number(m[1]), data: JSON.parse(m[2]) }));

    // HTTP/1.1: every event in a chunk of its exact size; deleting the tree ends the body with the last chunk.
    const before = (await owner.get("/api/trees")).body.find((t: any) => t._id === tree._id).revision;
    const chunked = await raw(
      tree._id,
      "1.1",
      (bytes) => bytes.endsWith("\r\n0\r\n\r\n"),
      async () => {
        await buildCard(owner, tree._id, { content: "über the wire" });
        expect((await owner.delete(`/api/trees/${tree._id}`)).status).toBe(204);
      },
    );
    expect(chunked.head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(chunked.head.toLowerCase()).toContain("\r\ntransfer-encoding: chunked");
    let body = "";
    let rest = chunked.body;
    for (;;) {
      const line = /^([0-9a-f]+)\r\n/.exec(rest);
      expect(line, `a chunk's size line at ${JSON.stringify(rest.slice(0, 40))}`).not.toBeNull();
      const size = Number.parseInt(line![1], 16);
      const start = line![0].length;
      expect(rest.slice(start + size, start + size + 2)).toBe("\r\n");
      if (size === 0) break;
      body += rest.slice(start, start + size);
      rest = rest.slice(start + size + 2);
    }
    expect(rest).toBe("0\r\n\r\n");
    const text = Buffer.from(body, "latin1").toString("utf8");
    expect(text.startsWith("retry: ")).toBe(true);
    expect(eventsIn(text).map((e) => [e.id, e.data.cards[0].content])).toEqual([[before + 1, "über the wire"]]);

    // HTTP/1.0 has no chunks: the events as they are, the body ended by closing the connection.
    const tree10 = await buildTree(owner);
    const plain = await raw(
      tree10._id,
      "1.0",
      () => false,
      async () => {
        await buildCard(owner, tree10._id, { content: "one oh" });
        expect((await owner.delete(`/api/trees/${tree10._id}`)).status).toBe(204);
      },
    );
    expect(plain.closed).toBe(true);
    expect(plain.head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(plain.head.toLowerCase()).not.toContain("transfer-encoding");
    expect(eventsIn(plain.body).map((e) => e.data.cards[0].content)).toEqual(["one oh"]);
    expect(plain.body).not.toMatch(/^[0-9a-f]+\r\n/m);
  });

  it("limits anonymous streams per address with 429", async () => {
    const tree = await buildTree(owner);
    await owner.put(`/api/trees/${tree._id}`, { publicUrl: `limit-${tree._id}` });
    const open = [];
    for (let i = 0; i < 3; i++) open.push(await follow(new Api(server.url), tree._id));
    expect(open.map((s) => s.status)).toEqual([200, 200, 200]);
    const refused = await follow(new Api(server.url), tree._id);
    expect(refused.status).toBe(429);
    expect(refused.json.error).toBe("too_many_requests");
    // A signed-in user is counted apart.
    const mine = await follow(owner, tree._id);
    expect(mine.status).toBe(200);
    mine.close();
    open[0].close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const later = await follow(new Api(server.url), tree._id);
    expect(later.status).toBe(200);
    for (const stream of [...open, later]) stream.close();
  });
});

describe("the server's limit on streams open at once, from everyone", () => {
  let small: InProcessServer;
  beforeAll(async () => {
    small = await startInProcessServer({ LIVE_STREAMS_TOTAL: "3" });
  });
  afterAll(() => small.stop());

  it("refuses the stream past it with 429 whoever asks, and lets the next one in once one closes", async () => {
    const [ann, bob, cid] = [await buildUser(small.url, "ann"), await buildUser(small.url, "bob"), await buildUser(small.url, "cid")];
    const trees = [await buildTree(ann), await buildTree(bob), await buildTree(cid)];
    const open = (api: Api, tree: any) => SseReader.open(small.url, `/api/trees/${tree._id}/events`, auth(api));
    const held = [await open(ann, trees[0]), await open(ann, trees[0]), await open(bob, trees[1])];
    expect(held.map((s) => s.status)).toEqual([200, 200, 200]);
    const refused = await open(cid, trees[2]);
    expect(refused.status).toBe(429);
    expect(refused.json.error).toBe("too_many_requests");
    expect(refused.json.message).toMatch(/on this server/);
    held[0].close();
    const deadline = Date.now() + 5000;
    let later = await open(cid, trees[2]);
    while (later.status === 429 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      later = await open(cid, trees[2]);
    }
    expect(later.status).toBe(200);
    // A refused stream took nothing: still exactly one place was freed.
    expect((await open(bob, trees[1])).status).toBe(429);
    for (const stream of [...held, later]) stream.close();
  });
});

describe("GraphQL subscription treeChanged", () => {
  const SUBSCRIPTION = `subscription ($t: ID!, $s: Int) { treeChanged(treeId: $t, since: $s) { revision kind userId reset deleted cards { id content depth } tree { name } } }`;

  function subscribe(as: Api | null, variables: Record<string, unknown>): Promise<SseReader> {
    return SseReader.open(
      server.url,
      "/graphql",
      { accept: "text/event-stream", "content-type": "application/json", ...(as ? auth(as) : {}) },
      "POST",
      JSON.stringify({ query: SUBSCRIPTION, variables }),
    );
  }

  const changes = (reader: SseReader) => reader.data("next").map((e) => e.data?.treeChanged);

  it("receives another user's changes and resumes with since", async () => {
    const tree = await sharedTree();
    const live = await subscribe(owner, { t: tree._id });
    expect(live.status).toBe(200);
    expect(live.headers.get("content-type")).toContain("text/event-stream");
    const card = await buildCard(friend, tree._id, { content: "over GraphQL", position: 3 });
    await live.waitFor(1, "next", 2000);
    expect(changes(live)[0]).toEqual({
      revision: tree.revision + 1,
      kind: "card.create",
      userId: friend.user._id,
      reset: false,
      deleted: [],
      cards: [{ id: card._id, content: "over GraphQL", depth: 1 }],
      tree: null,
    });
    live.close();

    await owner.put(`/api/trees/${tree._id}`, { name: "While away" });
    const resumed = await subscribe(owner, { t: tree._id, s: tree.revision + 1 });
    await resumed.waitFor(1, "next");
    expect(changes(resumed)).toEqual([expect.objectContaining({ revision: tree.revision + 2, kind: "tree.update", tree: { name: "While away" } })]);
    resumed.close();
  });

  it("resets a reader too far behind, then completes", async () => {
    const tree = await buildTree(owner);
    for (let i = 0; i < MAX_BACKLOG + 1; i++) await buildCard(owner, tree._id, { content: `${i}`, position: i });
    const behind = await subscribe(owner, { t: tree._id, s: 0 });
    await behind.waitForEnd();
    expect(behind.events.at(-1)!.event).toBe("complete");
    expect(changes(behind)).toEqual([expect.objectContaining({ reset: true, revision: MAX_BACKLOG + 2, cards: [] })]);
  });

  it("answers the same permissions and refuses a negative since", async () => {
    const fixture = await permissionFixture(server.url, false, people);
    const hidden = await subscribe(people.other, { t: fixture.tree._id });
    await hidden.waitFor(1, "next");
    expect(hidden.data("next")[0].errors[0].extensions.code).toBe("not_found");

    const negative = await subscribe(owner, { t: fixture.tree._id, s: -1 });
    const refusal = negative.status === 200 ? (await negative.waitFor(1, "next"))[0] : negative.json;
    expect(refusal.errors[0].extensions.code).toBe("invalid_request");
    const notNumber = await subscribe(owner, { t: fixture.tree._id, s: "abc" });
    expect(notNumber.status).toBe(400);
  });

  it("is held to the operation limits like a query", async () => {
    const tree = await buildTree(owner);
    const deep = `subscription ($t: ID!) { treeChanged(treeId: $t) { cards { ${"children { ".repeat(15)}id${" }".repeat(15)} } } }`;
    const reply = await SseReader.open(
      server.url,
      "/graphql",
      { accept: "text/event-stream", "content-type": "application/json", ...auth(owner) },
      "POST",
      JSON.stringify({ query: deep, variables: { t: tree._id } }),
    );
    const refusal = reply.status === 200 ? (await reply.waitFor(1, "next"))[0] : reply.json;
    expect(refusal.errors[0].extensions.code).toBe("invalid_request");
    expect(refusal.errors[0].message).toContain("depth limit");
  });
});
