/**
 * Structured logs: one JSON line per event on stdout. Request lines carry the method, the
 * path without its query string, the status, the time taken and the user's id; never
 * headers, bodies or credentials.
 */
import type { NextFunction, Request, Response } from "express";

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export function createLogger(write: (line: string) => void = (l) => process.stdout.write(l)): Logger {
  const log = (level: string, message: string, fields: Record<string, unknown> = {}) => {
    write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...fields })}\n`);
  };
  return { info: (m, f) => log("info", m, f), error: (m, f) => log("error", m, f) };
}

export function requestLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      logger.info("request", {
        method: req.method,
        path: req.originalUrl.split("?")[0],
        status: res.statusCode,
        ms: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        user: req.auth?.user?._id ?? req.auth?.unconfirmed?._id ?? null,
        // The client's address as the server takes it (behind TRUST_PROXY, from X-Forwarded-For).
        address: req.ip ?? null,
      });
    });
    next();
  };
}
