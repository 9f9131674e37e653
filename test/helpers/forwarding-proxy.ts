/**
 * An HTTP proxy for browser tests that stand something between the page and the server (a
 * deploy, a connection cut mid-answer): it forwards every request as it came, and hands each
 * upstream answer to the test's hook first. A hook that returns true has answered the
 * response itself; otherwise the answer passes through untouched (head, then body as a
 * stream).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ProxyHooks {
  /** Answers a request here, not forwarding it; returns true if it did. */
  intercept?(req: http.IncomingMessage, res: http.ServerResponse): boolean;
  /** Changes the headers sent upstream (a copy of the request's, `host` the server's). */
  request?(req: http.IncomingMessage, headers: http.OutgoingHttpHeaders): void;
  /** Takes over the server's answer; returns true if it answers `res` itself. */
  answer?(req: http.IncomingMessage, answer: http.IncomingMessage, res: http.ServerResponse): boolean;
}

export interface ForwardingProxy {
  url: string;
  close(): Promise<void>;
}

export async function forwardingProxy(target: string, hooks: ProxyHooks = {}): Promise<ForwardingProxy> {
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    if (hooks.intercept?.(req, res)) {
      req.resume();
      return;
    }
    const headers: http.OutgoingHttpHeaders = { ...req.headers, host: upstream.host };
    hooks.request?.(req, headers);
    const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url ?? "/", headers }, (answer) => {
      // The server's side reset mid-answer: the browser's connection goes too, as it would
      // through a real proxy.
      answer.on("error", () => res.destroy());
      if (hooks.answer?.(req, answer, res)) return;
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on("error", () => res.socket?.destroy());
    // The browser gave up on a request (a reload cancels a stream or a preload): ECONNRESET on
    // its side, which without a listener was thrown out of the test run (an ECONNRESET from
    // this proxy failed a run once).
    req.on("error", () => forward.destroy());
    res.on("error", () => forward.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The whole body of an answer. */
export function wholeBody(answer: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    answer.on("data", (chunk: Buffer) => chunks.push(chunk));
    answer.on("end", () => resolve(Buffer.concat(chunks)));
    answer.on("error", reject);
  });
}
