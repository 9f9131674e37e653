/**
 * What one request may make the server resolve, counted while it executes. The static
 * limits (src/graphql/operation-limits.ts) cannot know how long a list is: on a public
 * tree of 21 cards, `cards { parent { children { parent { children ... } } } }` revisits
 * the same cards 20 times per level. Every resolver that hands out cards, trees or
 * collaborators counts them here, `content` and `export` count their characters, and the
 * first count past a limit stops the request with `payload_too_large`.
 *
 * Once spent, a nullable field answers null without another error (`spent`), and a
 * non-null one throws again, which graphql-js propagates up, abandoning the lists above
 * it; so what is left of the execution finishes at once. `resultBudgetPlugin` then
 * answers the one error (src/graphql/yoga.ts).
 */
import { getOperationAST } from "graphql";
import { isAsyncIterable, type Plugin } from "graphql-yoga";
import type { GraphQLLimits } from "../config.js";
import { PayloadTooLargeError } from "../domain/errors.js";
import type { GraphQLContext } from "./context.js";

export class ResultBudget {
  private records = 0;
  private characters = 0;
  /** The error that ended the request, once the budget is spent. */
  error: PayloadTooLargeError | null = null;

  constructor(private readonly limits: Pick<GraphQLLimits, "records" | "text">) {}

  get spent(): boolean {
    return this.error !== null;
  }

  /**
   * Counts `list` (cards, trees, collaborators about to be returned) and returns it.
   * @throws PayloadTooLargeError once the request has resolved more than its limit.
   */
  list<T>(list: T[]): T[] {
    this.countRecords(list.length);
    return list;
  }

  /** Counts one record, for a field that returns one. @throws as `list` does. */
  one<T>(record: T): T {
    this.countRecords(1);
    return record;
  }

  /** Counts the characters of `text` (card content, an export) and returns it. @throws as `list` does. */
  text(text: string): string {
    this.characters += text.length;
    if (this.characters > this.limits.text) {
      this.fail(`This request asks for more than ${this.limits.text} characters of card text and exports; ask for less at once.`);
    }
    return text;
  }

  private countRecords(n: number): void {
    this.records += n;
    if (this.records > this.limits.records) {
      this.fail(
        `This request resolves more than ${this.limits.records} cards, trees and collaborators; ask for less at once. ` +
          "A tree's flat `cards` list (with `depth` and `parentId`) reads each card once; `parent` and `children` " +
          "nested in each other read the same cards again and again.",
      );
    }
  }

  private fail(message: string): never {
    this.error ??= new PayloadTooLargeError(message);
    throw this.error;
  }
}

/**
 * Replaces the result of a request whose budget ran out with its one error (without the
 * errors of the fields abandoned after it). A query's data is dropped: it is cut short
 * where the budget ran out. A mutation's data is kept, since its writes happened.
 */
export const resultBudgetPlugin: Plugin<GraphQLContext> = {
  onExecute: ({ args }) => ({
    onExecuteDone: ({ result, setResult }) => {
      const budgetError = args.contextValue.budget.error;
      if (!budgetError || isAsyncIterable(result)) return;
      const first = result.errors?.find((error) => error.originalError === budgetError);
      if (!first) return;
      const mutation = getOperationAST(args.document, args.operationName)?.operation === "mutation";
      setResult({ data: mutation ? result.data : null, errors: [first] });
    },
  }),
};
