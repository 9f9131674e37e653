/**
 * GraphQL clients for the integration tests: graphql-request against the running server,
 * as a REST test's user (their basic credentials) or anonymously.
 */
import { ClientError, GraphQLClient, type Variables } from "graphql-request";
import { expect } from "vitest";
import type { Api } from "../helpers/api.js";

export interface GraphQLErrorBody {
  message: string;
  path?: (string | number)[];
  extensions: { code: string; details?: { path: string; message: string }[] };
}

export interface Reply<T> {
  data: T | null;
  errors: GraphQLErrorBody[];
}

export class Gql {
  private readonly client: GraphQLClient;

  constructor(
    readonly baseUrl: string,
    readonly headers: Record<string, string> = {},
  ) {
    this.client = new GraphQLClient(`${baseUrl}/graphql`, { headers, errorPolicy: "all" });
  }

  /** The same user as a REST client, by their basic credentials. */
  static as(api: Api): Gql {
    return new Gql(api.baseUrl, api.authHeader ? { authorization: api.authHeader } : {});
  }

  /** Data when there is no error; fails the test with the errors otherwise. */
  async data<T = any>(document: string, variables?: Variables): Promise<T> {
    const reply = await this.reply<T>(document, variables);
    expect(reply.errors, JSON.stringify(reply.errors)).toEqual([]);
    return reply.data as T;
  }

  /** Data (partial or null) and errors. */
  async reply<T = any>(document: string, variables?: Variables): Promise<Reply<T>> {
    try {
      const result = await this.client.rawRequest<T>(document, variables);
      return { data: result.data ?? null, errors: (result.errors as unknown as GraphQLErrorBody[] | undefined) ?? [] };
    } catch (err) {
      // Errors before execution (a malformed document) come back without data.
      if (err instanceof ClientError) {
        return { data: (err.response.data as T) ?? null, errors: (err.response.errors as unknown as GraphQLErrorBody[]) ?? [] };
      }
      throw err;
    }
  }

  /** The codes of the errors a request gets, in order. */
  async codes(document: string, variables?: Variables): Promise<string[]> {
    return (await this.reply(document, variables)).errors.map((e) => e.extensions.code);
  }
}
