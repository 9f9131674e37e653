/**
 * JSON request bodies: a body in any other media type is refused (415), one over the size
 * limit is refused (413) before it is buffered whole, and malformed JSON or bytes that are
 * not UTF-8 are a 400 (rather than stored with replacement characters).
 */
import { isUtf8 } from "node:buffer";
import express, { type NextFunction, type Request, type Response } from "express";
import { DomainError } from "../shared/errors.js";

/** Whether the request carries a body at all (a length above 0, or chunks). */
export function hasBody(req: Request): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

export function jsonBody(limitBytes: number) {
  const parse = express.json({
    limit: limitBytes,
    type: () => true,
    verify: (_req, _res, bytes) => {
      if (!isUtf8(bytes)) throw Object.assign(new Error("not UTF-8"), { status: 400 });
    },
  });
  return (req: Request, res: Response, next: NextFunction) => {
    if (!hasBody(req)) return next();
    if (!req.is("application/json") && !req.is("application/*+json")) {
      return next(new DomainError("unsupported_media_type", "Send the request body as application/json."));
    }
    parse(req, res, next);
  };
}
