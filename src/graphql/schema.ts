/**
 * Gathers the type files into the one schema served at /graphql.
 */
import { builder } from "./builder.js";
import "./user.js";
import "./card.js";
import "./tree.js";
import "./collaborator.js";
import "./export-format.js";

builder.queryType({ description: "Reads. Private records the caller cannot open read as null." });
builder.mutationType({ description: "Every REST write. Anonymous callers get `unauthenticated`." });

export const schema = builder.toSchema();
