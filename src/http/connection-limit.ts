/**
 * At most so many open connections per client address. Every other limit counts requests; a
 * client that only opens connections (idle, kept alive for `KEEP_ALIVE_TIMEOUT_MS`, or
 * sending its headers slowly for up to `HEADERS_TIMEOUT_MS`) would otherwise hold as many
 * sockets, and the memory each costs, as it likes. A connection past the limit is closed as
 * it is accepted, before a byte is read; the connections already open are untouched.
 *
 * Behind a proxy (`TRUST_PROXY`) every connection comes from the proxy, so the limit is not
 * applied there: the proxy limits its clients (docs/self-hosting.md).
 */
import type { Server } from "node:http";
import { addressKey } from "../auth/middleware.js";

/** How often one address's refusals are logged at most. */
const LOG_EVERY_MS = 60_000;

export function limitConnectionsPerAddress(server: Server, limit: number, log: (message: string, fields: Record<string, unknown>) => void): void {
  const open = new Map<string, number>();
  const lastLogged = new Map<string, number>();
  server.on("connection", (socket) => {
    const address = addressKey(socket.remoteAddress ?? "unknown");
    const count = (open.get(address) ?? 0) + 1;
    if (count > limit) {
      socket.destroy();
      const now = Date.now();
      if (now - (lastLogged.get(address) ?? 0) >= LOG_EVERY_MS) {
        lastLogged.set(address, now);
        log("connection refused: too many open from one address", { address, limit });
      }
      return;
    }
    open.set(address, count);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else {
        open.delete(address);
        lastLogged.delete(address);
      }
    });
  });
}
