/**
 * schema.graphql at the repository root is the printed schema (SPEC §5). This fails while
 * it differs from the schema the server serves: run `npm run schema` and commit the file.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { buildClientSchema, getIntrospectionQuery, type IntrospectionQuery } from "graphql";
import { afterAll, beforeAll, expect, it } from "vitest";
import { schemaSDL } from "../../src/graphql/sdl.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

it("schema.graphql equals the served schema", async () => {
  const introspection = await new Gql(server.url).data<IntrospectionQuery>(getIntrospectionQuery());
  const served = schemaSDL(buildClientSchema(introspection));
  const committed = await readFile(path.resolve(import.meta.dirname, "../../schema.graphql"), "utf8");
  expect(committed, "schema.graphql is stale: run `npm run schema`").toBe(served);
});
