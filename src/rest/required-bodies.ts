/**
 * A request without a body where the OpenAPI document says one is required is refused with
 * 400, before its route runs: `PUT /api/preferences` with nothing sent is a mistake (a client
 * that lost its body), not a request to change nothing (`{}` says that). The document
 * (openapi.ts, `requestBody.required`) is the one place that says which operations need a
 * body, so the server and what it publishes cannot disagree.
 */
import type { NextFunction, Request, Response } from "express";
import { ValidationError } from "../shared/errors.js";
import { hasBody } from "../http/json-body.js";
import { openApiDocument } from "./openapi.js";

interface PathItem {
  [method: string]: { requestBody?: { required?: boolean } };
}

/** `METHOD` and path pattern of each operation whose body is required. */
function operationsNeedingABody(): { method: string; pattern: RegExp }[] {
  const paths = openApiDocument().paths as Record<string, PathItem>;
  return Object.entries(paths).flatMap(([template, item]) =>
    Object.entries(item)
      .filter(([, operation]) => operation.requestBody?.required === true)
      .map(([method]) => ({
        method: method.toUpperCase(),
        pattern: new RegExp(
          `^${template
            .split(/(\{\w+\})/)
            .map((part) => (part.startsWith("{") ? "[^/]+" : part.replace(/[.*+?^$()|[\]\\]/g, "\\$&")))
            .join("")}$`,
        ),
      })),
  );
}

/** The middleware, for the /api router (paths relative to it). */
export function requireDocumentedBodies() {
  const needing = operationsNeedingABody();
  return (req: Request, _res: Response, next: NextFunction) => {
    if (hasBody(req) || !needing.some((op) => op.method === req.method && op.pattern.test(req.path))) return next();
    next(new ValidationError("This request needs a JSON body.", [{ path: "", message: "a JSON body is required" }]));
  };
}
