/**
 * The one mapping from errors to GraphQL (SPEC §4: the REST error codes travel in
 * `extensions.code`). Domain errors keep their code and message, validation errors add
 * `details`; errors of the GraphQL request itself (syntax, unknown field, a variable of the
 * wrong type) are `invalid_request`; anything else is `internal`, logged, and never shown.
 */
import { GraphQLError } from "graphql";
import type { StandardSchemaV1 } from "@pothos/plugin-validation";
import type { Plugin } from "graphql-yoga";
import { DomainError, ValidationError, type ErrorCode } from "../shared/errors.js";
import { validationError } from "../shared/schemas.js";
import type { Logger } from "../http/logger.js";

const INTERNAL_MESSAGE = "Something went wrong on the server. Try again later.";

/**
 * The validation plugin's failure as the same ValidationError the REST side reports.
 * Paths start at the argument: `input.position`, `id`.
 */
export function validationFailure(failure: StandardSchemaV1.FailureResult): ValidationError {
  return validationError(
    failure.issues.map((issue) => ({
      path: (issue.path ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment)),
      message: issue.message,
    })),
  );
}

function withCode(error: GraphQLError, message: string, code: ErrorCode, extra: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    extensions: { ...extra, code },
  });
}

/**
 * Yoga's `maskError`: called with every error of a result (and errors of the request
 * itself). Returns the error as the client sees it.
 */
export function maskError(logger: Logger) {
  return (error: unknown): Error => {
    let original: unknown = error;
    while (original instanceof GraphQLError && original.originalError) original = original.originalError;
    const graphqlError = error instanceof GraphQLError ? error : new GraphQLError(String(error));
    if (original instanceof DomainError) {
      const details = original instanceof ValidationError && original.details.length > 0 ? { details: original.details } : {};
      return withCode(graphqlError, original.message, original.code, details);
    }
    // A GraphQLError with no cause underneath comes from parsing, validating or coercing
    // the request: the client's mistake, described by graphql-js in words a person reads.
    if (original instanceof GraphQLError) {
      // Keep yoga's HTTP hint (400 for a malformed request), nothing else it attached.
      const http = original.extensions.http === undefined ? {} : { http: original.extensions.http };
      return withCode(graphqlError, original.message, "invalid_request", http);
    }
    logger.error("graphql error", {
      path: graphqlError.path?.join("."),
      error: String((original as Error | undefined)?.stack ?? original),
    });
    return withCode(graphqlError, INTERNAL_MESSAGE, "internal");
  };
}

/**
 * A domain error refusing the whole request before anything ran, as the one error of its
 * answer. Its HTTP status (REST's for the same code) is sent as yoga sends it for a
 * malformed document (`spec`): to clients that accept `application/graphql-response+json`;
 * plain `application/json` clients get 200, as the GraphQL-over-HTTP spec asks. `headers`
 * (`Retry-After`) are sent either way.
 */
export function refusal(error: DomainError, httpStatus: number, headers?: Record<string, string>): GraphQLError {
  return new GraphQLError(error.message, {
    extensions: { code: error.code, http: { status: httpStatus, spec: true, ...(headers ? { headers } : {}) } },
  });
}

/**
 * Errors of validating the document (an unknown field, a missing argument) never reach
 * `maskError`; this yoga plugin gives them their code. Yoga adds its own code only where
 * none is set, and still answers them with HTTP 400 where the GraphQL-over-HTTP spec says so.
 */
export const documentErrorCodes: Plugin = {
  onValidate: () => ({ valid, result }) => {
    if (valid) return;
    for (const error of result) error.extensions.code = "invalid_request" satisfies ErrorCode;
  },
};

/**
 * Runs a read whose subject may be hidden from the caller, and answers `null` when it is:
 * a private tree or card the caller cannot open reads as missing (SPEC §3), not as an error.
 * Other errors (a malformed id) are still reported.
 */
export async function nullWhenHidden<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof DomainError && (err.code === "not_found" || err.code === "unauthenticated")) return null;
    throw err;
  }
}
