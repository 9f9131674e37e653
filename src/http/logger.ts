/**
 * Structured logs: one JSON line per event on stdout. Request lines carry the method, the
 * path without its query string, the status, the time taken and the user's id; never
 * headers, bodies or credentials.
 *
 * Lines written in one turn of the event loop go out together at its end (`setImmediate`),
 * in one write instead of one each (issue 27: under load a turn answers several requests,
 * and each line's own write was a system call a request, a third of the request log's cost
 * on a cached read). An error line goes at once, with the lines before it, and whatever
 * waits goes when the process exits. A process killed outright (SIGKILL) loses at most the
 * lines of the turn it was in, as nginx's access log with `buffer=` can.
 */
import type { NextFunction, Request, Response } from "express";

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A request's line (`requestLog`), as `info("request", line)` writes it. */
  request(line: RequestLine): void;
}

/** What a request's line says, in this order. */
export interface RequestLine {
  method: string;
  path: string;
  status: number;
  ms: number;
  user: string | null;
  address: string | null;
}

/** The loggers with lines waiting for their turn's end, written out if the process exits first. */
const waitingAtExit = new Set<() => void>();
let exitHooked = false;

export function createLogger(write: (text: string) => void = (text) => process.stdout.write(text)): Logger {
  let waiting = "";
  const flush = () => {
    waitingAtExit.delete(flush);
    if (waiting === "") return;
    const text = waiting;
    waiting = "";
    write(text);
  };
  const add = (line: string) => {
    const first = waiting === "";
    waiting += line;
    if (!first) return;
    waitingAtExit.add(flush);
    if (!exitHooked) {
      exitHooked = true;
      process.on("exit", () => waitingAtExit.forEach((pending) => pending()));
    }
    setImmediate(flush);
  };
  const json = (level: string, message: string, fields: Record<string, unknown>) =>
    `${JSON.stringify({ time: new Date().toISOString(), level, message, ...fields })}\n`;
  return {
    info: (message, fields = {}) => add(json("info", message, fields)),
    error: (message, fields = {}) => {
      add(json("error", message, fields));
      flush();
    },
    // The same text as `info("request", line)`, made without the object spread and the
    // generic serializer's walk: strings through JSON.stringify, numbers as JSON writes them.
    request: (line) =>
      add(
        `{"time":"${new Date().toISOString()}","level":"info","message":"request","method":${JSON.stringify(line.method)},` +
          `"path":${JSON.stringify(line.path)},"status":${line.status},"ms":${JSON.stringify(line.ms)},` +
          `"user":${JSON.stringify(line.user)},"address":${JSON.stringify(line.address)}}\n`,
      ),
  };
}

/**
 * `behindProxy`: whether TRUST_PROXY is set. Without it the client's address is the
 * socket's, which is what `req.ip` would work out after parsing X-Forwarded-For and
 * dropping every entry of it (4% of a cached read's own work, issue 27).
 */
export function requestLog(logger: Logger, behindProxy: boolean) {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const url = req.originalUrl;
      const query = url.indexOf("?");
      logger.request({
        method: req.method,
        path: query < 0 ? url : url.slice(0, query),
        status: res.statusCode,
        ms: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        user: req.auth?.user?._id ?? req.auth?.unconfirmed?._id ?? null,
        // The client's address as the server takes it (behind TRUST_PROXY, from X-Forwarded-For).
        address: (behindProxy ? req.ip : req.socket.remoteAddress) ?? null,
      });
    });
    next();
  };
}
