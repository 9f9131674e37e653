import type { RequestHandler } from "express";
import type { DomainContext } from "../domain/context.js";
import type { Logger } from "../http/logger.js";

export function graphqlHandler(_ctx: DomainContext, _logger: Logger): RequestHandler {
  return (_req, res) => {
    res.status(501).json({ error: "internal", message: "GraphQL is not built yet." });
  };
}
