/**
 * docs/self-hosting.md's reverse proxy, run as written (issue 27): Debian's nginx with the
 * page's configuration in front of three Cardtree processes on one PostgreSQL. Only the
 * site's values are put in: the ports, the certificate (made here, self-signed for the page's
 * server name) and the processes' addresses. The http block around it is Debian's default
 * (`gzip on`). Checked through it, as a browser or a script meets it over HTTPS:
 * - a live stream is passed on event by event, not held in a buffer;
 * - with `TRUST_PROXY=1`, the server sees the client's address, not nginx's, and not one the
 *   client wrote into X-Forwarded-For itself;
 * - an answer is compressed once (nginx's gzip does not compress it again);
 * - a process killed mid-stream: its readers come back through nginx on another process
 *   with Last-Event-ID and miss nothing written meanwhile;
 * - a WebSocket upgrade (GraphQL subscriptions, graphql-ws) gets through.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import zlib from "node:zlib";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildUser, type Api } from "../helpers/api.js";
import { createTestDatabase } from "../helpers/postgres.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { describeWithNginx } from "../helpers/tool-suites.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SERVER_NAME = "cards.example.org";
const run = promisify(execFile);

/** The page's nginx block with the site's values put in, and nothing else changed. */
async function proxyConfiguration(site: { httpsPort: number; httpPort: number; upstreams: number[]; cert: string; key: string }): Promise<string> {
  const doc = await readFile(path.join(ROOT, "docs", "self-hosting.md"), "utf8");
  const block = /```nginx\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error("docs/self-hosting.md has no nginx block");
  const servers = [...block.matchAll(/^\s*server 127\.0\.0\.1:\d+;$/gm)];
  if (servers.length !== site.upstreams.length) throw new Error(`the page's upstream lists ${servers.length} processes, the test runs ${site.upstreams.length}`);
  let n = 0;
  return block
    .replace(/^(\s*)server 127\.0\.0\.1:\d+;$/gm, (_line, indent: string) => `${indent}server 127.0.0.1:${site.upstreams[n++]};`)
    .replace("listen 443 ssl;", `listen 127.0.0.1:${site.httpsPort} ssl;`)
    .replace("listen 80;", `listen 127.0.0.1:${site.httpPort};`)
    .replace(/ssl_certificate\s+\S+;/, `ssl_certificate ${site.cert};`)
    .replace(/ssl_certificate_key\s+\S+;/, `ssl_certificate_key ${site.key};`);
}

async function freePort(): Promise<number> {
  const net = await import("node:net");
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

let dir: string;
let nginx: ChildProcess;
let servers: TestServer[] = [];
let base: string;
let ca: Buffer;
let alice: Api;

async function startNginx(): Promise<void> {
  dir = await mkdtemp(path.join(os.tmpdir(), "cardtree-nginx-"));
  // nginx's workers run as nobody: their temporary files need a place they may write.
  await chmod(dir, 0o777);
  const cert = path.join(dir, "cert.pem");
  const key = path.join(dir, "key.pem");
  await run("openssl", [
    ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"],
    ...["-subj", `/CN=${SERVER_NAME}`, "-addext", `subjectAltName=DNS:${SERVER_NAME}`],
    ...["-keyout", key, "-out", cert],
  ]);
  ca = await readFile(cert);
  const httpsPort = await freePort();
  const site = await proxyConfiguration({ httpsPort, httpPort: await freePort(), upstreams: servers.map((s) => Number(new URL(s.url).port)), cert, key });
  for (const temp of ["body", "proxy", "fastcgi", "uwsgi", "scgi"]) await mkdir(path.join(dir, temp), { mode: 0o777 });
  const conf = `
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 256; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    # As Debian's /etc/nginx/nginx.conf has it.
    gzip on;
    access_log ${dir}/access.log;
    client_body_temp_path ${dir}/body;
    proxy_temp_path ${dir}/proxy;
    fastcgi_temp_path ${dir}/fastcgi;
    uwsgi_temp_path ${dir}/uwsgi;
    scgi_temp_path ${dir}/scgi;
${site}
}
`;
  const confFile = path.join(dir, "nginx.conf");
  await writeFile(confFile, conf);
  await run("/usr/sbin/nginx", ["-t", "-p", dir, "-c", confFile]);
  nginx = spawn("/usr/sbin/nginx", ["-p", dir, "-c", confFile], { stdio: "ignore" });
  base = `https://127.0.0.1:${httpsPort}`;
  for (let i = 0; i < 100; i++) {
    try {
      if ((await request("GET", "/healthz")).status === 200) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`nginx did not answer: ${await readFile(path.join(dir, "error.log"), "utf8").catch(() => "")}`);
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: Buffer;
}

/** An HTTPS request through nginx, trusting the test's certificate, from `localAddress`. */
function request(method: string, pathname: string, options: { headers?: Record<string, string>; body?: unknown; localAddress?: string } = {}): Promise<Reply> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${base}${pathname}`,
      {
        method,
        ca,
        servername: SERVER_NAME,
        localAddress: options.localAddress,
        agent: false,
        headers: { host: SERVER_NAME, ...(payload ? { "content-type": "application/json" } : {}), ...options.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

const auth = () => ({ authorization: alice.authHeader! });

async function json(method: string, pathname: string, body?: unknown): Promise<any> {
  const reply = await request(method, pathname, { headers: auth(), body });
  if (reply.status >= 300) throw new Error(`${method} ${pathname}: ${reply.status} ${reply.bytes.toString("utf8")}`);
  return JSON.parse(reply.bytes.toString("utf8"));
}

/** A live stream read through nginx as EventSource reads it: events by id, and whether it ended. */
class Stream {
  readonly ids: number[] = [];
  ended = false;
  private buffer = "";
  private req?: ReturnType<typeof https.request>;

  static open(pathname: string, lastEventId?: number): Promise<Stream> {
    const stream = new Stream();
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { host: SERVER_NAME, accept: "text/event-stream", ...auth() };
      if (lastEventId !== undefined) headers["last-event-id"] = String(lastEventId);
      stream.req = https.request(`${base}${pathname}`, { ca, servername: SERVER_NAME, agent: false, headers }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => stream.take(chunk));
        res.on("end", () => (stream.ended = true));
        res.on("error", () => (stream.ended = true));
        res.on("aborted", () => (stream.ended = true));
        resolve(stream);
      });
      stream.req.on("error", (err) => {
        stream.ended = true;
        reject(err);
      });
      stream.req.end();
    });
  }

  private take(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf("\n\n")) >= 0) {
      const frame = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const id = /^id: (\d+)$/m.exec(frame);
      if (id && /^event: change$/m.test(frame)) this.ids.push(Number(id[1]));
    }
  }

  get last(): number | undefined {
    return this.ids[this.ids.length - 1];
  }

  close(): void {
    this.req?.destroy();
  }
}

async function eventually(probe: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describeWithNginx("docs/self-hosting.md's nginx in front of three processes on PostgreSQL", () => {
  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    const env = { STORE: "postgres", DATABASE_URL: databaseUrl, TRUST_PROXY: "1" };
    servers = await Promise.all([startTestServer({ env }), startTestServer({ env }), startTestServer({ env })]);
    await startNginx();
    // Signed up on one process; basic credentials work on every process.
    alice = await buildUser(servers[0].url, "proxied");
  }, 120_000);

  afterAll(async () => {
    nginx?.kill("SIGQUIT");
    await Promise.all(servers.map((server) => server.stop().catch(() => undefined)));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("passes a live stream on event by event", async () => {
    const tree = await json("POST", "/api/trees", { name: "live behind nginx", seed: "# one" });
    const stream = await Stream.open(`/api/trees/${tree._id}/events`);
    try {
      for (let i = 1; i <= 3; i++) {
        await json("POST", `/api/trees/${tree._id}/cards`, { treeId: tree._id, parentId: null, position: 1000 + Date.now() % 100000, content: `event ${i}` });
        // Each event arrives while the stream stays open: nothing waits for a buffer to fill.
        await eventually(() => stream.ids.length >= i, `event ${i} through nginx`);
        expect(stream.ended).toBe(false);
      }
    } finally {
      stream.close();
    }
  });

  it("gives the server the client's address with TRUST_PROXY, not nginx's nor one the client wrote", async () => {
    // The client connects from 127.0.0.2; nginx, from 127.0.0.1, adds it to X-Forwarded-For.
    const marker = `/api/trees/addressed-${Date.now()}`;
    const reply = await request("GET", marker, { headers: { ...auth(), "x-forwarded-for": "203.0.113.9" }, localAddress: "127.0.0.2" });
    expect(reply.status).toBe(404);
    await eventually(
      () => servers.some((server) => server.output.some((line) => line.includes(marker))),
      "the request's log line",
    );
    const line = servers.flatMap((server) => server.output).find((entry) => entry.includes(marker))!;
    expect(JSON.parse(line).address).toBe("127.0.0.2");
  });

  it("compresses an answer once: nginx's gzip leaves Cardtree's encoding alone", async () => {
    const seed = Array.from({ length: 60 }, (_, i) => `# Card ${i}\n\nSome words that repeat, and repeat again.`).join("\n\n");
    const tree = await json("POST", "/api/trees", { name: "compressed", seed });
    for (const encoding of ["gzip", "br"]) {
      const reply = await request("GET", `/api/trees/${tree._id}/cards`, { headers: { ...auth(), "accept-encoding": encoding } });
      expect(reply.status).toBe(200);
      expect(reply.headers["content-encoding"]).toBe(encoding);
      const plain = encoding === "br" ? zlib.brotliDecompressSync(reply.bytes) : zlib.gunzipSync(reply.bytes);
      // Decoded once, it is the JSON itself.
      expect(JSON.parse(plain.toString("utf8"))).toHaveLength(60);
    }
    const page = await request("GET", "/", { headers: { "accept-encoding": "gzip" } });
    expect(page.status).toBe(200);
    expect(zlib.gunzipSync(page.bytes).toString("utf8")).toContain("<!doctype html>");
  });

  it("lets a reader of a killed process resume on another with Last-Event-ID, missing nothing", async () => {
    const tree = await json("POST", "/api/trees", { name: "resumed", seed: "# start" });
    const eventsPath = `/api/trees/${tree._id}/events`;
    // Three streams, one per process (nginx takes the upstreams in turn).
    const streams = [await Stream.open(eventsPath), await Stream.open(eventsPath), await Stream.open(eventsPath)];
    try {
      await json("POST", `/api/trees/${tree._id}/cards`, { treeId: tree._id, parentId: null, position: 1000 + Date.now() % 100000, content: "before the kill" });
      await eventually(() => streams.every((stream) => stream.ids.length >= 1), "the first event on every stream");
      const victim = servers[2];
      await victim.kill();
      await eventually(() => streams.some((stream) => stream.ended), "the killed process's stream to end");
      const cut = streams.filter((stream) => stream.ended);
      expect(cut).toHaveLength(1);
      // Written while its reader is away, through nginx (to the processes still up).
      for (let i = 0; i < 3; i++) await json("POST", `/api/trees/${tree._id}/cards`, { treeId: tree._id, parentId: null, position: 1000 + Date.now() % 100000, content: `while away ${i}` });
      const resumed = await Stream.open(eventsPath, cut[0].last);
      try {
        await json("POST", `/api/trees/${tree._id}/cards`, { treeId: tree._id, parentId: null, position: 1000 + Date.now() % 100000, content: "after the resume" });
        const live = streams.find((stream) => !stream.ended)!;
        await eventually(() => live.ids.length >= 5, "every event on a stream that was never cut");
        await eventually(() => resumed.ids.length >= 4, "the missed events and the new one on the resumed stream");
        // The resumed reader has every change after the last it had, in order, once each.
        expect([...cut[0].ids, ...resumed.ids]).toEqual(live.ids);
      } finally {
        resumed.close();
      }
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it("passes a WebSocket upgrade for GraphQL subscriptions", async () => {
    const upgraded = await new Promise<{ status: number; protocol?: string }>((resolve, reject) => {
      const req = https.request(`${base}/graphql`, {
        ca,
        servername: SERVER_NAME,
        agent: false,
        headers: {
          host: SERVER_NAME,
          connection: "Upgrade",
          upgrade: "websocket",
          "sec-websocket-version": "13",
          "sec-websocket-key": Buffer.from("cardtree-nginx-1").toString("base64"),
          "sec-websocket-protocol": "graphql-transport-ws",
        },
      });
      req.on("upgrade", (res, socket) => {
        socket.destroy();
        resolve({ status: res.statusCode!, protocol: res.headers["sec-websocket-protocol"] as string | undefined });
      });
      req.on("response", (res) => {
        res.resume();
        resolve({ status: res.statusCode! });
      });
      req.on("error", reject);
      req.end();
    });
    expect(upgraded.status).toBe(101);
    expect(upgraded.protocol).toBe("graphql-transport-ws");
  });
});
