/**
 * What one request may make the server resolve, counted while it executes. The static
 * limits (src/graphql/operation-limits.ts) cannot know how long a list is: on a public
 * tree of 21 cards, `cards { parent { children { parent { children ... } } } }` revisits
 * the same cards 20 times per level. Every resolver that hands out cards, trees or
 * collaborators counts them here, each as many values as fields are selected on it (so
 * 30 aliases of `id` count 30), and `content` counts its characters; the first count past
 * a limit stops the request with `payload_too_large`. The unit is what an execution's
 * time and memory grow with: graphql-js resolves and stores every selected field of every
 * record.
 *
 * Once spent, a nullable field answers null without another error (`spent`), and a
 * non-null one throws again, which graphql-js propagates up, abandoning the lists above
 * it; so what is left of the execution finishes at once. `resultBudgetPlugin` then
 * answers the one error (src/graphql/yoga.ts).
 */
import { getOperationAST, Kind, type ExecutionResult, type FieldNode, type GraphQLResolveInfo, type SelectionSetNode } from "graphql";
import { isAsyncIterable, type Plugin } from "graphql-yoga";
import type { GraphQLLimits } from "../config.js";
import { PayloadTooLargeError } from "../shared/errors.js";
import type { GraphQLContext } from "./context.js";

/** Fields selected on each record a field returns, by its (parsed, cached) field node. */
const widths = new WeakMap<FieldNode, number>();

/** Fields selected in `set`, through fragments, each fragment once (as graphql-js merges them). */
function selectionWidth(set: SelectionSetNode | undefined, info: GraphQLResolveInfo, spread: Set<string>): number {
  let width = 0;
  for (const selection of set?.selections ?? []) {
    if (selection.kind === Kind.FIELD) width += 1;
    else if (selection.kind === Kind.INLINE_FRAGMENT) width += selectionWidth(selection.selectionSet, info, spread);
    else if (!spread.has(selection.name.value)) {
      spread.add(selection.name.value);
      width += selectionWidth(info.fragments[selection.name.value]?.selectionSet, info, spread);
    }
  }
  return width;
}

function widthOf(info: GraphQLResolveInfo): number {
  const node = info.fieldNodes[0]!;
  let width = widths.get(node);
  if (width === undefined) {
    const spread = new Set<string>();
    width = Math.max(1, info.fieldNodes.reduce((sum, field) => sum + selectionWidth(field.selectionSet, info, spread), 0));
    widths.set(node, width);
  }
  return width;
}

export class ResultBudget {
  private values = 0;
  private characters = 0;
  /** The error that ended the request, once the budget is spent. */
  error: PayloadTooLargeError | null = null;

  constructor(private readonly limits: Pick<GraphQLLimits, "values" | "text">) {}

  get spent(): boolean {
    return this.error !== null;
  }

  /** A fresh budget: for each event of a subscription, which is resolved like one request. */
  reset(): void {
    this.values = 0;
    this.characters = 0;
    this.error = null;
  }

  /**
   * Counts `list` (cards, trees, collaborators the field `info` is about to return) and returns it.
   * @throws PayloadTooLargeError once the request has resolved more than its limit.
   */
  list<T>(list: T[], info: GraphQLResolveInfo): T[] {
    this.count(list.length * widthOf(info));
    return list;
  }

  /** Counts one record, for a field that returns one. @throws as `list` does. */
  one<T>(record: T, info: GraphQLResolveInfo): T {
    this.count(widthOf(info));
    return record;
  }

  /** Counts the characters of `text` (card content) and returns it. @throws as `list` does. */
  text(text: string): string {
    this.characters += text.length;
    if (this.characters > this.limits.text) {
      this.fail(`This request asks for more than ${this.limits.text} characters of card text; ask for less at once.`);
    }
    return text;
  }

  private count(values: number): void {
    this.values += values;
    if (this.values > this.limits.values) {
      this.fail(
        `This request resolves more than ${this.limits.values} values (each field of each card, tree or collaborator); ` +
          "ask for less at once. A tree's flat `cards` list (with `depth` and `parentId`) reads each card once; " +
          "`parent` and `children` nested in each other read the same cards again and again.",
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
  // A subscription resolves each event with the one request context: each event gets the
  // whole budget afresh, or a long-lived stream would run out of it.
  onSubscribe: ({ args }) => ({
    onSubscribeResult: ({ result, setResult }) => {
      if (!isAsyncIterable(result)) return;
      const budget = args.contextValue.budget;
      const source = result[Symbol.asyncIterator]();
      const events: AsyncIterableIterator<ExecutionResult> = {
        next: () => {
          budget.reset();
          return source.next();
        },
        return: () => source.return?.() ?? Promise.resolve({ done: true, value: undefined }),
        [Symbol.asyncIterator]() {
          return events;
        },
      };
      setResult(events);
    },
  }),
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
