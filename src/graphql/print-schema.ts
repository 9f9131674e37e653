/**
 * `npm run schema`: writes the schema to schema.graphql at the repository root. Commit the
 * result; test/graphql/schema.test.ts fails while it differs from the served schema.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { schema } from "./schema.js";
import { schemaSDL } from "./sdl.js";

const target = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../schema.graphql");
await writeFile(target, schemaSDL(schema));
process.stdout.write(`wrote ${path.relative(process.cwd(), target) || target}\n`);
