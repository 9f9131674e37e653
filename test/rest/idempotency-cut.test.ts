/**
 * "Cut the connection after the commit, before the answer" (issue 26): a TCP proxy between
 * the client and the real server drops the connection once the server starts answering
 * (it has committed), or right after the request went through. The client never sees an
 * answer and retries with the same Idempotency-Key: there is exactly one card, and the
 * retry answers what the first request did.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

type Cut = "after-answer-starts" | "after-request";

/** A proxy to the server that, for each connection, lets the request through and then cuts it. */
async function cuttingProxy(target: URL, cut: Cut): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    const cutBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (bytes) => {
      upstream.write(bytes);
      if (bytes.includes("\r\n\r\n")) requests++;
      // The whole request is through once its body is: a POST's ends with the JSON.
      if (cut === "after-request" && bytes.toString("latin1").trimEnd().endsWith("}")) setImmediate(cutBoth);
    });
    // Not one byte of the answer reaches the client.
    upstream.on("data", cutBoth);
    client.on("error", cutBoth);
    upstream.on("error", cutBoth);
    client.on("close", () => sockets.delete(client));
    upstream.on("close", () => sockets.delete(upstream));
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const { port } = proxy.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        proxy.close(() => resolve());
      }),
  };
}

/** Sends until an answer other than "still running" comes back, waiting Retry-After between tries. */
async function retryUntilAnswered(send: () => Promise<Awaited<ReturnType<Api["post"]>>>) {
  for (let attempt = 0; attempt < 30; attempt++) {
    const res = await send();
    if (res.status !== 409 || res.headers.get("retry-after") === null) return res;
    await new Promise((resolve) => setTimeout(resolve, Number(res.headers.get("retry-after")) * 1000));
  }
  throw new Error("still running after 30 tries");
}

describe("a connection cut before the answer, then a retry with the same key", () => {
  for (const cut of ["after-answer-starts", "after-request"] as const) {
    it(`makes exactly one card (cut ${cut})`, async () => {
      const alice = await buildUser(server.url);
      const tree = await buildTree(alice);
      const proxy = await cuttingProxy(new URL(server.url), cut);
      try {
        const through = new Api(proxy.url, alice.credentials);
        const key = `cut-${cut}-${Date.now()}`;
        const body = { treeId: tree._id, position: 1, content: `cut ${cut}` };
        await expect(through.post(`/api/trees/${tree._id}/cards`, body, { "Idempotency-Key": key })).rejects.toThrow();
        expect(proxy.requests()).toBe(1);

        const retry = await retryUntilAnswered(() => alice.post(`/api/trees/${tree._id}/cards`, body, { "Idempotency-Key": key }));
        expect(retry.status).toBe(201);
        // Cut once the server answered, the first request certainly ran: the retry is its
        // answer. Cut right after the request, it may not have run (the server refuses a
        // request whose connection closed before its body was read): the retry runs it.
        if (cut === "after-answer-starts") expect(retry.headers.get("idempotent-replayed")).toBe("true");
        const made = (await alice.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === body.content);
        expect(made).toHaveLength(1);
        expect(retry.body).toEqual(made[0]);
      } finally {
        await proxy.close();
      }
    });
  }

  it("without a key, the same retry would have made a second card (what the key prevents)", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const proxy = await cuttingProxy(new URL(server.url), "after-answer-starts");
    try {
      const body = { treeId: tree._id, position: 1, content: "no key" };
      await expect(new Api(proxy.url, alice.credentials).post(`/api/trees/${tree._id}/cards`, body)).rejects.toThrow();
      expect((await alice.post(`/api/trees/${tree._id}/cards`, body)).status).toBe(201);
      expect((await alice.get(`/api/trees/${tree._id}/cards`)).body.filter((c: any) => c.content === "no key")).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  });
});
