/**
 * The Pothos schema builder, alone: every type file adds itself to it and schema.ts
 * gathers them. Fields are non-null unless a field says otherwise, so `null` in the
 * schema always means something ("you may not see this", "not set").
 */
import SchemaBuilder from "@pothos/core";
import ValidationPlugin from "@pothos/plugin-validation";
import type { GraphQLContext } from "./context.js";
import { validationFailure } from "./errors.js";

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  DefaultFieldNullability: false;
  Scalars: { ID: { Input: string; Output: string } };
}>({
  plugins: [ValidationPlugin],
  defaultFieldNullability: false,
  validation: { validationError: validationFailure },
});
