/**
 * A TCP relay between a server and PostgreSQL, which a test cuts and restores as a network
 * failure or a database restart would (test/postgres/outage.test.ts, resync.test.ts).
 */
import { createServer, Socket, type Server } from "node:net";

/** A TCP relay to PostgreSQL on a fixed local port, which can be cut and restored. */
export class Relay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = new Socket();
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => undefined);
      }
      upstream.connect(this.target.port, this.target.host);
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /** Refuses new connections and ends every open one. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
