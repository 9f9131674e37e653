/**
 * The Pothos schema builder, alone: every type file adds itself to it and schema.ts
 * gathers them. Fields are non-null unless a field says otherwise, so `null` in the
 * schema always means something ("you may not see this", "not set").
 */
import SchemaBuilder from "@pothos/core";
import ComplexityPlugin from "@pothos/plugin-complexity";
import ValidationPlugin from "@pothos/plugin-validation";
import type { GraphQLContext } from "./context.js";
import { validationFailure } from "./errors.js";

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  DefaultFieldNullability: false;
  Scalars: { ID: { Input: string; Output: string } };
}>({
  plugins: [ValidationPlugin, ComplexityPlugin],
  defaultFieldNullability: false,
  validation: { validationError: validationFailure },
  // Costs only: src/graphql/operation-limits.ts sets the expensive ones and enforces them
  // once per request, before any resolver, rather than the plugin's check in every root field.
  complexity: { disabled: true },
});
