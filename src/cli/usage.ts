/**
 * The CLI's parsed arguments and its usage error (exit code 2), shared by the commands.
 */
import type { parseArgs } from "node:util";

export type CliArgs = ReturnType<typeof parseArgs<{
  args: string[];
  allowPositionals: true;
  options: {
    password: { type: "string" };
    limit: { type: "string" };
    tree: { type: "string" };
    parent: { type: "string" };
    format: { type: "string" };
    output: { type: "string"; short: "o" };
    card: { type: "string" };
    column: { type: "string" };
    newlines: { type: "string" };
    start: { type: "string" };
    end: { type: "string" };
    help: { type: "boolean"; short: "h" };
  };
}>>;

export class UsageError extends Error {}
