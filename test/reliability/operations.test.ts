/**
 * Operations (issue 7.6): health and readiness, and a graceful SIGTERM: requests in flight
 * when it arrives finish and are kept, `/readyz` turns 503 at once, and the process exits 0
 * with its store flushed.
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { cardCreationLoad, cardsOf, expectValidTree } from "./tree-checks.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let server: TestServer | undefined;
afterEach(async () => {
  await server?.kill();
  server = undefined;
});

/** A raw connection, to hold a request half-sent across the signal. */
function rawConnection(url: string) {
  const socket = net.connect(Number(new URL(url).port), "127.0.0.1");
  let received = "";
  socket.on("data", (d) => (received += d.toString()));
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  return { socket, closed, received: () => received };
}

describe("health and shutdown", () => {
  it("/healthz and /readyz answer 200 while serving", async () => {
    server = await startTestServer({ env: { LOG: "off" } });
    const anonymous = new Api(server.url);
    expect((await anonymous.get("/healthz")).body).toEqual({ status: "ok" });
    expect((await anonymous.get("/readyz")).body).toEqual({ status: "ready" });
  });

  it("SIGTERM: in-flight requests finish and are kept, exit code 0", async () => {
    server = await startTestServer({ env: { LOG: "off" } });
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice);
    const load = cardCreationLoad(alice, tree._id, 8);
    await sleep(400);

    const body = JSON.stringify({ name: "sent across the signal" });
    const raw = rawConnection(server.url);
    raw.socket.write(
      `POST /api/trees HTTP/1.1\r\nHost: x\r\nAuthorization: ${alice.authHeader}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 4)}`,
    );
    await sleep(200);
    const exited = new Promise<number | null>((resolve) => server!.process.once("exit", (code) => resolve(code)));
    server.process.kill("SIGTERM");
    await sleep(300);
    raw.socket.write(body.slice(4));
    await raw.closed;
    const answered = await load.stop();
    expect(await exited).toBe(0);

    expect(raw.received()).toMatch(/^HTTP\/1\.1 201/);

    server = await startTestServer({ dataDir: server.dataDir, env: { LOG: "off" } });
    const again = new Api(server.url, alice.credentials);
    const cards = await cardsOf(again, tree._id);
    const ids = new Set(cards.map((c) => c._id));
    expect(answered.length).toBeGreaterThan(10);
    expect(answered.filter((id) => !ids.has(id))).toEqual([]);
    expectValidTree(cards);
    expect((await again.get("/api/trees")).body.map((t: any) => t.name)).toContain("sent across the signal");
  }, 60_000);

  it("SIGTERM: a connection that has sent nothing is closed at once, one that has begun a request is answered", async () => {
    // The production shutdown timeout (30 s): the exit must not wait for it.
    server = await startTestServer({ env: { LOG: "off", SHUTDOWN_TIMEOUT_MS: "30000" } });
    const alice = await buildUser(server.url);
    // A browser's preconnect: connected, nothing sent.
    const silent = rawConnection(server.url);
    // A request whose head is half-sent when the signal arrives.
    const started = rawConnection(server.url);
    started.socket.write(`GET /api/trees HTTP/1.1\r\nHost: x\r\n`);
    await sleep(200);
    const exited = new Promise<number | null>((resolve) => server!.process.once("exit", (code) => resolve(code)));
    const signalled = Date.now();
    server.process.kill("SIGTERM");
    await silent.closed;
    expect(Date.now() - signalled).toBeLessThan(10_000);
    expect(silent.received()).toBe("");
    await sleep(300);
    started.socket.write(`Authorization: ${alice.authHeader}\r\nConnection: close\r\n\r\n`);
    await started.closed;
    expect(started.received()).toMatch(/^HTTP\/1\.1 200/);
    expect(await exited).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(10_000);
  }, 60_000);
});

describe("readiness during shutdown", () => {
  it("/readyz answers 503 from the moment SIGTERM arrives, while requests are still served", async () => {
    server = await startTestServer({ env: { LOG: "off", SHUTDOWN_DELAY_MS: "1500" } });
    const alice = await buildUser(server.url);
    expect((await new Api(server.url).get("/readyz")).status).toBe(200);
    server.process.kill("SIGTERM");
    await sleep(300);
    const probe = await new Api(server.url).get("/readyz");
    expect(probe.status).toBe(503);
    expect(probe.body).toEqual({ status: "stopping" });
    expect((await alice.get("/api/trees")).status).toBe(200);
    await server.stop();
  }, 30_000);
});
