/**
 * What every resolver gets: the domain context (its store noting what the request reads,
 * for the result cache), who is calling (settled by the HTTP middleware shared with /api)
 * and from where, the request's view of whole trees (from the shared read model), and
 * what the request may still resolve (its budget).
 */
import type { Auth } from "../auth/middleware.js";
import type { DomainContext } from "../domain/context.js";
import { accessOf, type StreamAccess } from "../domain/live.js";
import { UnauthenticatedError } from "../shared/errors.js";
import type { StoredUser } from "../shared/records.js";
import type { Splices } from "./card-lists.js";
import { budgetLimits, ResultBudget } from "./result-budget.js";
import { ResultDependencies, watchedStore } from "./result-dependencies.js";
import { TreeCards } from "./tree-cards.js";

export interface GraphQLContext {
  domain: DomainContext;
  user: StoredUser | null;
  /** The cookie session's CSRF token, "" for basic credentials (the User's `csrf`). */
  csrf: string;
  /** The client's address, for the live streams' limits. */
  address: string;
  /** What the caller is signed in with: live streams end with it (its expiry, a sign-out). */
  access: StreamAccess;
  trees: TreeCards;
  /** What the request's store reads depended on, noted by the store itself. */
  dependencies: ResultDependencies;
  /** Resolvers count here the records and text they return. */
  budget: ResultBudget;
  /**
   * Card lists written without graphql-js (card-lists.ts), for a query's execution; null
   * otherwise (a mutation, a subscription, before execution).
   */
  splices: Splices | null;
  /** The client's address when the caller is not signed in (its executions share an allowance), else null. */
  anonymousAddress: string | null;
}

/** `address`: the client's, as the per-address limits count it (`clientAddress`). */
export function createGraphQLContext(domain: DomainContext, auth: Auth, address: string): GraphQLContext {
  const dependencies = new ResultDependencies(domain.treeRevisions.epoch);
  const watched: DomainContext = { ...domain, store: watchedStore(domain.store, dependencies) };
  return {
    domain: watched,
    user: auth.user,
    csrf: auth.session?.csrf ?? "",
    address,
    access: accessOf(auth.user, auth.session),
    trees: new TreeCards(watched, auth.user),
    dependencies,
    budget: new ResultBudget(budgetLimits(domain.config.graphql, auth.user !== null)),
    splices: null,
    anonymousAddress: auth.user ? null : address,
  };
}

/**
 * The signed-in user's record. What a field makes of it (email, limit, favourites) is not
 * tracked by any tree revision, so the result is not cached.
 * @throws UnauthenticatedError for an anonymous call.
 */
export function requireUser(context: GraphQLContext): StoredUser {
  context.dependencies.untracked();
  if (!context.user) throw new UnauthenticatedError();
  return context.user;
}
