/**
 * Gathers the type files into the one schema served at /graphql, with each field's cost
 * for the request limits.
 */
import { builder } from "./builder.js";
import { applyFieldCosts } from "./operation-limits.js";
import "./user.js";
import "./preferences.js";
import "./card.js";
import "./tree.js";
import "./card-changes.js";
import "./collaborator.js";
import "./history.js";
import "./export-format.js";
import "./tree-change.js";

builder.queryType({ description: "Reads. Private records the caller cannot open read as null." });
builder.mutationType({ description: "Every REST write. Anonymous callers get `unauthenticated`." });

export const schema = builder.toSchema();
applyFieldCosts(schema);
