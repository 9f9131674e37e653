/**
 * What the REST routers are built from.
 */
import type { RequestHandler } from "express";
import type { CredentialChecker } from "../auth/credentials.js";
import type { SessionManager } from "../auth/sessions.js";
import type { DomainContext } from "../domain/context.js";
import type { CardsJson } from "../domain/read-model.js";
import type { Logger } from "../http/logger.js";
import type { Tree } from "../shared/records.js";

export interface RestDeps {
  ctx: DomainContext;
  credentials: CredentialChecker;
  sessions: SessionManager;
  logger: Logger;
  /** JSON body parser with the ordinary limit. */
  // `any` params: a handler typed with express's loose params dictionary would widen the
  // route's own params (`:treeId` → string | string[]) in every route it is used in.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  jsonLimit: RequestHandler<any>;
  /** JSON body parser with the import limit (seeds). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  importLimit: RequestHandler<any>;
}

/** What the routers get: the deps plus what restApi builds once for all of them. */
export interface RouteDeps extends RestDeps {
  /**
   * A tree's cards body and ETag at its revision, from the read model; the caller authorised
   * the tree. `held`: the same when the model holds it already, else undefined (then `forTree`).
   */
  cardsJson: { forTree(tree: Tree): Promise<CardsJson>; held(tree: Tree): CardsJson | undefined };
  /**
   * The Idempotency-Key step (SPEC §13, src/http/idempotency.ts), after the body is read:
   * `jsonLimit` and `importLimit` end with it; a write that reads no body, or its own, names it.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  idempotent: RequestHandler<any>;
}
