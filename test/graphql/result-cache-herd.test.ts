/**
 * Identical whole-tree queries arriving together while none is cached are executed once
 * (src/graphql/result-cache.ts): the others wait for the first and get its bytes. The case
 * that showed it: a server's first GraphQL requests, which all wait for GraphQL to load
 * (src/app.ts loads it on first use) and then all missed at once; under wrk, eight
 * 10,000-card executions back to back on one core timed requests out. Its own file, so
 * that GraphQL is not loaded yet in this process when the requests arrive.
 */
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

const WHOLE_TREE = `query ($id: ID!) { tree(id: $id) { name roots { id content children { id content } } } }`;

/** Connections opened ahead, so that requests written in one go arrive together. */
async function openConnections(count: number): Promise<Socket[]> {
  const { hostname, port } = new URL(server.url);
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(Number(port), hostname, () => resolve(socket));
          socket.on("error", reject);
        }),
    ),
  );
}

/** Writes one POST on each socket in the same tick; resolves to each raw response. */
function postOnEach(sockets: Socket[], as: Api, body: unknown): Promise<string[]> {
  const payload = JSON.stringify(body);
  const { host } = new URL(server.url);
  const request =
    `POST /graphql HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nAuthorization: ${as.authHeader}\r\n` +
    `Content-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`;
  const answers = sockets.map(
    (socket) =>
      new Promise<string>((resolve) => {
        const chunks: Buffer[] = [];
        socket.on("data", (chunk: Buffer) => chunks.push(chunk));
        socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      }),
  );
  for (const socket of sockets) socket.write(request);
  return Promise.all(answers);
}

const bodyOf = (raw: string) => raw.slice(raw.indexOf("\r\n\r\n") + 4);

async function counted<T>(request: () => Promise<T>): Promise<{ value: T; reads: number }> {
  const before = server.reads.count;
  const value = await request();
  return { value, reads: server.reads.count - before };
}

it("executes identical queries that arrive together once, and answers all of them", async () => {
  const owner = await buildUser(server.url, "herd");
  const tree = await buildTree(owner, { name: "Herd", seed: "# A\n\n## A1\n\n# B\n" });
  const body = { query: WHOLE_TREE, variables: { id: tree._id } };
  // The tree held by the read model first, as it is for the measured execution below
  // (which follows an edit the model hears): both executions then read alike.
  expect((await owner.get(`/api/trees/${tree._id}/cards`)).status).toBe(200);

  const sockets = await openConnections(6);
  const { value: answers, reads: together } = await counted(() => postOnEach(sockets, owner, body));
  expect(answers).toHaveLength(6);
  for (const answer of answers) {
    expect(answer.startsWith("HTTP/1.1 200")).toBe(true);
    expect(bodyOf(answer)).toBe(bodyOf(answers[0]));
  }
  expect(JSON.parse(bodyOf(answers[0])).data.tree.roots.map((card: { content: string }) => card.content)).toEqual(["# A", "# B"]);

  // What one execution reads, and what authentication alone reads (a cached answer).
  const card = JSON.parse(bodyOf(answers[0])).data.tree.roots[0].id as string;
  await owner.put(`/api/trees/${tree._id}/cards/${card}`, { content: "# A edited" });
  const [one] = await openConnections(1);
  const { reads: computed } = await counted(() => postOnEach([one], owner, body));
  const [again] = await openConnections(1);
  const { value: cached, reads: authentication } = await counted(() => postOnEach([again], owner, body));
  expect(bodyOf(cached[0])).toContain("# A edited");
  const execution = computed - authentication;
  expect(execution).toBeGreaterThan(0);

  expect(together).toBe(6 * authentication + execution);
});
