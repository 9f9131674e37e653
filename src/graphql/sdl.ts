/**
 * The schema as SDL, in one stable form: types sorted by name, so that schema.graphql
 * diffs show real changes only, and so the staleness test can print the served
 * (introspected) schema the same way.
 */
import { lexicographicSortSchema, printSchema, type GraphQLSchema } from "graphql";

export function schemaSDL(schema: GraphQLSchema): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}
