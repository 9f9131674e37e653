/**
 * JSON request bodies: a body in any other media type, or labelled with any charset but
 * UTF-8, is refused (415; body-parser would otherwise decode `charset=utf-16` and store
 * what it made of it), one over the size limit is refused (413) before it is buffered
 * whole, and malformed JSON or bytes that are not UTF-8 are a 400 (rather than stored with
 * replacement characters). Used by /api and /graphql alike.
 */
import { isUtf8 } from "node:buffer";
import express, { type NextFunction, type Request, type Response } from "express";
import { DomainError } from "../shared/errors.js";

function hasBody(req: Request): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/** The `charset` parameter of a Content-Type, lower-cased and unquoted; undefined when absent. */
export function charsetOf(contentType: string | undefined): string | undefined {
  for (const param of (contentType ?? "").split(";").slice(1)) {
    const eq = param.indexOf("=");
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== "charset") continue;
    return param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .toLowerCase();
  }
  return undefined;
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
    const charset = charsetOf(req.headers["content-type"]);
    if (charset !== undefined && charset !== "utf-8") {
      return next(new DomainError("unsupported_media_type", `Send the request body in UTF-8; charset=${charset.slice(0, 40)} is not accepted.`));
    }
    parse(req, res, next);
  };
}
