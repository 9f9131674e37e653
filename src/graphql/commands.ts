/**
 * How a resolver runs a domain command (src/domain/command.ts). A mutation's `input`
 * argument was parsed by the validation plugin with the command's own schema (inputs.ts
 * declares `validate: <command>.input`), so it reaches `run` as parsed, not parsed again;
 * arguments the plugin did not parse go through `execute`, which parses them.
 */
import type { z } from "zod";
import type { Command } from "../domain/command.js";
import type { Actor } from "../domain/policy.js";
import type { GraphQLContext } from "./context.js";

export { execute } from "../domain/command.js";

/** Runs `cmd` with an `input` the validation plugin already parsed with `cmd.input`. */
export function runValidated<Target, Schema extends z.ZodType, Output, A extends Actor | null>(
  context: GraphQLContext,
  actor: A,
  cmd: Command<Target, Schema, Output, A>,
  target: Target,
  input: unknown,
): Promise<Output> {
  return cmd.run(context.domain, actor, target, input as z.output<Schema>);
}
