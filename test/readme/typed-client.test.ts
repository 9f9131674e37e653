/**
 * The README's typed-client example (```ts under "A typed client from the OpenAPI
 * document") compiles against types that openapi-typescript generates from the document the
 * server publishes: a renamed field, a body the document no longer allows or an answer of
 * another shape fails here, as it would fail for a user generating the same types. The
 * types are generated into a temporary directory, never into the repository.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { afterAll, expect, it } from "vitest";
import { openApiDocument } from "../../src/rest/openapi.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
let dir: string | undefined;
afterAll(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

/** The README's one ```ts block. */
async function readmeExample(): Promise<string> {
  const readme = await readFile(path.join(ROOT, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  expect(blocks).toHaveLength(1);
  return blocks[0];
}

/** tsc's complaints about `files`, as text. */
function diagnostics(files: string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
    types: [],
    skipLibCheck: true,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}

it("the README's example type-checks against openapi-typescript's types of the document", async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "cardtree-typed-client-"));
  const types = astToString(await openapiTS(JSON.parse(JSON.stringify(openApiDocument()))));
  await writeFile(path.join(dir, "cardtree-api.d.ts"), types);
  const example = path.join(dir, "example.ts");
  await writeFile(example, `${await readmeExample()}\nexport {};\n`);
  expect(diagnostics([example])).toEqual([]);

  // The check bites: a body the document does not allow is a compile error.
  const wrong = path.join(dir, "wrong.ts");
  await writeFile(wrong, `${(await readmeExample()).replace('{ content: "A better scene" }', '{ content: 42 }')}\nexport {};\n`);
  expect(diagnostics([wrong]).join("\n")).toMatch(/number.*not assignable to type 'string'/s);
});
