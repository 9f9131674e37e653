/**
 * The CLI's flags, its parsed arguments and its usage error (exit code 2), shared by the
 * commands.
 */
import { parseArgs } from "node:util";

const OPTIONS = {
  password: { type: "string" },
  limit: { type: "string" },
  tree: { type: "string" },
  parent: { type: "string" },
  format: { type: "string" },
  output: { type: "string", short: "o" },
  card: { type: "string" },
  column: { type: "string" },
  newlines: { type: "string" },
  start: { type: "string" },
  end: { type: "string" },
  leaves: { type: "boolean" },
  to: { type: "string" },
  force: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** @throws TypeError from node:util for an unknown or malformed flag. */
export function parseCliArgs(argv: string[]) {
  return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
}

export type CliArgs = ReturnType<typeof parseCliArgs>;

export class UsageError extends Error {}
