/**
 * Limits on the operation a request runs, checked with its variables after validation and
 * before any resolver (docs/graphql.md, "Limits"):
 * - depth and cost, as @pothos/plugin-complexity computes them from the schema: each field
 *   costs 1, a list multiplies what is selected under it by its expected length, and the
 *   expensive fields cost what FIELD_COSTS says. Over a limit: 400 `invalid_request`.
 * - the number of mutations (root fields of a mutation): 400 `invalid_request`.
 * - how many times the answer may hold the same cards and trees, against their JSON
 *   (answer-bound.ts: no re-entry through `parent`/`tree` under a list, at most
 *   GRAPHQL_COPY_LIMIT copies): 400 `invalid_request`.
 * - the import limits (bytes, cards) across every `importSeed` and seeded `createTree` of
 *   the request together, not only per field: one 1,000-card variable used by 50 aliases
 *   is 50,000 cards. Over them: 413 `payload_too_large`, and nothing is imported.
 *
 * The plugin's own enforcement (in the root resolvers, an error per root field, status
 * 200) is switched off in builder.ts; this answers one error, before anything ran.
 * Static analysis cannot know how long a list really is; src/graphql/result-budget.ts
 * counts while executing.
 */
import { complexityFromQuery, type FieldComplexityValue } from "@pothos/plugin-complexity";
import {
  getArgumentValues,
  getOperationAST,
  getVariableValues,
  Kind,
  type DocumentNode,
  type FieldNode,
  type GraphQLError,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from "graphql";
import type { Plugin } from "graphql-yoga";
import type { Config, GraphQLLimits } from "../config.js";
import { PayloadTooLargeError, ValidationError } from "../shared/errors.js";
import type { SeedParser } from "../domain/ports/formats.js";
import { countSeedCards } from "../shared/seeds.js";
import { boundAnswer } from "./answer-bound.js";
import { collectFields } from "./selections.js";
import { refusal } from "./errors.js";

/** Exports, imports and copies of whole trees: at most four fit the default cost limit. */
export const EXPENSIVE = 10_000;

/**
 * Costs of the fields that cost more than the plugin's default (1, and for a list, what is
 * selected under it times 10). A list's `multiplier` is how many items it is expected to
 * hold. Set on the built schema by `applyFieldCosts` (schema.ts), so they sit in one table,
 * and as plain values: a cost computed from arguments would make the plugin run each
 * argument's validation before the request's limits are checked.
 */
export const FIELD_COSTS: Record<string, FieldComplexityValue> = {
  // Counts the user's trees and cards.
  "Query.me": 50,
  "Query.trees": { field: 50, multiplier: 10 },
  // Every card of a tree.
  "Tree.cards": { field: 1, multiplier: 100 },
  "Tree.roots": { field: 1, multiplier: 10 },
  // A tree has one parent-child link fewer than cards, so `children` nested to any depth
  // reads each card once in all. Going back up (`parent`, `tree`) and down again reads
  // cards again: only the result budget sees that.
  "Card.children": { field: 1, multiplier: 1 },
  "Tree.collaborators": { field: 10, multiplier: 5 },
  "Tree.export": EXPENSIVE,
  // A seeded createTree is an import too: its seed counts in the request's import totals.
  "Mutation.importSeed": { field: EXPENSIVE, multiplier: 10 },
  "Mutation.cloneTree": EXPENSIVE,
  "Mutation.clonePublicTree": EXPENSIVE,
  "Mutation.deleteTree": 100,
  "Mutation.deleteCard": { field: 100, multiplier: 10 },
  // Read from the change log on disk.
  "Tree.history": { field: 50, multiplier: 50 },
  "Tree.trash": { field: 50, multiplier: 10 },
  "Card.versions": { field: 50, multiplier: 50 },
  "Mutation.restoreTree": EXPENSIVE,
  "Mutation.restoreCard": { field: 100, multiplier: 10 },
  // Reads the tree's cards whole, as restoreCard does.
  "Mutation.revertChange": { field: 100, multiplier: 10 },
};

/** Puts FIELD_COSTS where the plugin reads each field's cost. @throws for a name not in `schema`. */
export function applyFieldCosts(schema: GraphQLSchema): void {
  for (const [coordinate, complexity] of Object.entries(FIELD_COSTS)) {
    const [typeName, fieldName] = coordinate.split(".");
    const type = schema.getType(typeName!);
    const field = type && "getFields" in type ? type.getFields()[fieldName!] : undefined;
    if (!field || !("resolve" in field)) throw new Error(`FIELD_COSTS names ${coordinate}, which the schema does not have.`);
    field.extensions = { ...field.extensions, complexity };
  }
}

/** The seeds of the mutation's imports (`importSeed`, `createTree` with a seed). */
function seedsOf(schema: GraphQLSchema, fields: Map<string, FieldNode>, variables: Record<string, unknown>): string[] {
  const mutationFields = schema.getMutationType()?.getFields() ?? {};
  const seeds: string[] = [];
  for (const node of fields.values()) {
    const name = node.name.value;
    if (name !== "importSeed" && name !== "createTree") continue;
    const input = getArgumentValues(mutationFields[name]!, node, variables).input as { seed?: unknown } | undefined;
    if (typeof input?.seed === "string") seeds.push(input.seed);
  }
  return seeds;
}

/**
 * Cards a seed would make, parsed as the import will parse it (a big seed on a worker
 * thread, so that a request of several large seeds does not hold the event loop); 0 for
 * one that does not parse (its own field reports that).
 */
async function cardsOf(seed: string, seeds: SeedParser): Promise<number> {
  try {
    return countSeedCards(await seeds.parseSeed(seed));
  } catch {
    return 0;
  }
}

/** @throws PayloadTooLargeError when the seeds together pass an import limit. */
async function checkImportTotals(seeds: string[], config: Config, parser: SeedParser): Promise<void> {
  const { limits } = config;
  // One seed alone is checked by the import itself, without parsing it twice.
  if (seeds.length < 2) return;
  const bytes = seeds.reduce((sum, seed) => sum + Buffer.byteLength(seed), 0);
  if (bytes > limits.importBodyBytes) {
    throw new PayloadTooLargeError(
      `These imports hold ${bytes} bytes in one request; at most ${limits.importBodyBytes} are allowed. Send them in separate requests.`,
    );
  }
  let cards = 0;
  for (const seed of seeds) cards += await cardsOf(seed, parser);
  if (cards > limits.importCards) {
    throw new PayloadTooLargeError(
      `These imports would make ${cards} cards in one request; at most ${limits.importCards} are allowed. Send them in separate requests.`,
    );
  }
}

/** @throws ValidationError for an operation past the depth, cost or mutation limits. */
function checkOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  fragments: Map<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
  context: object,
  limits: GraphQLLimits,
): Map<string, FieldNode> {
  const { depth, complexity } = complexityFromQuery(
    { ...document, definitions: [operation, ...fragments.values()] },
    { schema, ctx: context, variables },
  );
  if (depth > limits.depth) {
    throw new ValidationError(`Query depth limit of ${limits.depth} exceeded, found ${depth}.`);
  }
  if (complexity > limits.cost) {
    throw new ValidationError(
      `Query cost limit of ${limits.cost} exceeded, found ${complexity}. ` +
        `Each export, import or copy of a tree costs ${EXPENSIVE}; lists count their expected length (docs/graphql.md).`,
    );
  }
  // The root fields the operation runs, one per response key.
  const fields = new Map([...collectFields([operation.selectionSet], fragments)].map(([key, nodes]) => [key, nodes[0]!]));
  if (operation.operation === "mutation" && fields.size > limits.mutations) {
    throw new ValidationError(`Mutations limit of ${limits.mutations} exceeded, found ${fields.size}.`);
  }
  return fields;
}

/**
 * The checks of one operation (a query, mutation or subscription) before anything runs.
 * @returns the refusal to answer instead, or undefined to go on.
 */
async function refusalFor(
  args: { document: DocumentNode; operationName?: string | null; schema: GraphQLSchema; variableValues?: Record<string, unknown> | null; contextValue: unknown },
  config: Config,
  seeds: SeedParser,
): Promise<GraphQLError | undefined> {
  const operation = getOperationAST(args.document, args.operationName);
  if (!operation) return undefined;
  const coerced = getVariableValues(args.schema, operation.variableDefinitions ?? [], args.variableValues ?? {});
  // Bad variables: execution reports them as it always did.
  if (coerced.errors) return undefined;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of args.document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  try {
    const variables = args.variableValues ?? {};
    const fields = checkOperation(args.schema, args.document, operation, fragments, variables, args.contextValue as object, config.graphql);
    boundAnswer(args.schema, operation, fragments, coerced.coerced, config.graphql.copies);
    if (operation.operation === "mutation") await checkImportTotals(seedsOf(args.schema, fields, coerced.coerced), config, seeds);
  } catch (error) {
    if (error instanceof ValidationError) return refusal(error, 400);
    if (error instanceof PayloadTooLargeError) return refusal(error, 413);
    throw error;
  }
  return undefined;
}

/** The yoga plugin: queries and mutations before execution, subscriptions before they subscribe. */
export function operationLimits(config: Config, seeds: SeedParser): Plugin {
  return {
    onExecute: async ({ args, setResultAndStopExecution }) => {
      const refused = await refusalFor(args, config, seeds);
      if (refused) setResultAndStopExecution({ errors: [refused] });
    },
    onSubscribe: async ({ args, setResultAndStopExecution }) => {
      const refused = await refusalFor(args, config, seeds);
      if (refused) setResultAndStopExecution({ errors: [refused] });
    },
  };
}
