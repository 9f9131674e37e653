/**
 * The OpenAPI document passes Spectral's `spectral:oas` ruleset (the one `spectral lint`
 * applies to an OpenAPI file by default) with no error and no warning: every operation has
 * a summary, a description and tags, the document its contact, and every schema is valid.
 */
import spectralCore from "@stoplight/spectral-core";
import { Json as JsonParser } from "@stoplight/spectral-parsers";
import { oas } from "@stoplight/spectral-rulesets";
import { expect, it } from "vitest";
import { openApiDocument } from "../../src/rest/openapi.js";

const { Document, Spectral } = spectralCore;

it("spectral:oas finds no error and no warning", async () => {
  const spectral = new Spectral();
  spectral.setRuleset({ extends: [[oas as never, "recommended"]] });
  const results = await spectral.run(new Document(JSON.stringify(openApiDocument(), null, 2), JsonParser));
  // Severity 0 is an error, 1 a warning; 2 and 3 are information and hints.
  const problems = results.filter((r) => r.severity <= 1).map((r) => `${r.code} at ${r.path.join(".")}: ${r.message}`);
  expect(problems.join("\n")).toBe("");
});
