/**
 * `Idempotency-Key` on GraphQL (SPEC §13): a mutation request may carry one, with the same
 * rules as a REST write (src/http/idempotency.ts, src/domain/idempotency.ts). A query's key
 * is ignored: it changes nothing, so there is nothing to keep. Refusals are GraphQL errors
 * with the REST code in `extensions.code`, at the REST status.
 */
import type { Request, RequestHandler, Response } from "express";
import { Kind, parse, type OperationDefinitionNode } from "graphql";
import type { DomainContext } from "../domain/context.js";
import type { KeptAnswer } from "../domain/ports/store.js";
import { STATUS } from "../http/error-response.js";
import { idempotentWrites } from "../http/idempotency.js";
import type { Logger } from "../http/logger.js";
import { DomainError, KeyInFlightError, ValidationError } from "../shared/errors.js";

/**
 * Whether the request's operation is a mutation. A document that does not parse (within
 * the token limit) is not: yoga refuses it, and nothing runs.
 */
function isMutation(maxTokens: number) {
  return (req: Request): boolean => {
    const { query, operationName } = (req.body ?? {}) as { query?: unknown; operationName?: unknown };
    if (typeof query !== "string") return false;
    try {
      const operations = parse(query, { maxTokens, noLocation: true }).definitions.filter(
        (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
      );
      const chosen = typeof operationName === "string" ? operations.find((op) => op.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined;
      return chosen?.operation === "mutation";
    } catch {
      return false;
    }
  };
}

function refuse(res: Response, error: DomainError): void {
  if (error instanceof KeyInFlightError) res.set("Retry-After", String(error.retryAfterSeconds));
  const details = error instanceof ValidationError && error.details.length > 0 ? { details: error.details } : {};
  res.status(STATUS[error.code]).json({ errors: [{ message: error.message, extensions: { code: error.code, ...details } }] });
}

/** The codes of a GraphQL answer's errors: one coded internal or unavailable changed nothing. */
function errorCodes(answer: KeptAnswer): string[] {
  try {
    const { errors } = JSON.parse(Buffer.from(answer.body).toString("utf8")) as { errors?: { extensions?: { code?: unknown } }[] };
    return (errors ?? []).map((e) => String(e.extensions?.code ?? ""));
  } catch {
    return [];
  }
}

/** The middleware for /graphql, after its body parser. */
export function idempotentMutations(ctx: DomainContext, logger: Logger): RequestHandler {
  return idempotentWrites(ctx, { logger, applies: isMutation(ctx.config.graphql.tokens), refuse, errorCodes });
}
