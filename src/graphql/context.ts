/**
 * What every resolver gets: the domain context, who is calling (settled by the HTTP
 * middleware shared with /api), the request's cache of loaded trees, the record of
 * which trees the result was computed from (for the result cache), and what the request
 * may still resolve (its budget).
 */
import type { Auth } from "../auth/middleware.js";
import type { DomainContext } from "../domain/context.js";
import { UnauthenticatedError } from "../shared/errors.js";
import type { StoredUser } from "../shared/records.js";
import { budgetLimits, ResultBudget } from "./result-budget.js";
import { ResultDependencies } from "./result-dependencies.js";
import { TreeCards } from "./tree-cards.js";

export interface GraphQLContext {
  domain: DomainContext;
  user: StoredUser | null;
  /** The cookie session's CSRF token, "" for basic credentials (the User's `csrf`). */
  csrf: string;
  trees: TreeCards;
  /** Resolvers record here each tree they read, before reading it. */
  dependencies: ResultDependencies;
  /** Resolvers count here the records and text they return. */
  budget: ResultBudget;
  /** The client's address when the caller is not signed in (its executions share an allowance), else null. */
  anonymousAddress: string | null;
}

/** `address`: the client's, as the per-address limits count it (`clientAddress`). */
export function createGraphQLContext(domain: DomainContext, auth: Auth, address: string): GraphQLContext {
  const dependencies = new ResultDependencies(domain.treeRevisions);
  return {
    domain,
    user: auth.user,
    csrf: auth.session?.csrf ?? "",
    trees: new TreeCards(domain, auth.user, dependencies),
    dependencies,
    budget: new ResultBudget(budgetLimits(domain.config.graphql, auth.user !== null)),
    anonymousAddress: auth.user ? null : address,
  };
}

/** The signed-in user. @throws UnauthenticatedError for an anonymous call. */
export function requireUser(context: GraphQLContext): StoredUser {
  if (!context.user) throw new UnauthenticatedError();
  return context.user;
}
