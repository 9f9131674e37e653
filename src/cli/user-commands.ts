/**
 * `user add | passwd | limit | list`, as the system actor (the operator at the machine).
 */
import { execute } from "../domain/command.js";
import type { DomainContext } from "../domain/context.js";
import { SYSTEM_ACTOR } from "../domain/policy.js";
import { listUsers, resetPassword, setCardLimit, signUp } from "../domain/users.js";
import { UsageError, type CliArgs } from "./usage.js";
import { readPassword } from "./prompt.js";

async function passwordFrom(args: CliArgs): Promise<string> {
  return args.values.password ?? (await readPassword("Password: "));
}

function parseLimit(text: string | undefined): number {
  const limit = Number(text);
  if (text === undefined || !Number.isInteger(limit) || limit < -1) throw new UsageError("The limit must be a whole number, -1 for unlimited.");
  return limit;
}

export async function userCommand(ctx: DomainContext, rest: string[], args: CliArgs): Promise<void> {
  const [sub, email, value] = rest;
  switch (sub) {
    case "add": {
      if (!email) throw new UsageError("user add needs an EMAIL.");
      const limit = args.values.limit === undefined ? undefined : parseLimit(args.values.limit);
      const user = await execute(ctx, SYSTEM_ACTOR, signUp, {}, { email, password: await passwordFrom(args) });
      if (limit !== undefined) await execute(ctx, SYSTEM_ACTOR, setCardLimit, { email: user.email }, { limit });
      process.stdout.write(`Added ${user.email} (${user._id}).\n`);
      return;
    }
    case "passwd": {
      if (!email) throw new UsageError("user passwd needs an EMAIL.");
      const user = await execute(ctx, SYSTEM_ACTOR, resetPassword, {}, { email, password: await passwordFrom(args) });
      process.stdout.write(`Password changed for ${user.email}; their sessions are ended.\n`);
      return;
    }
    case "limit": {
      if (!email) throw new UsageError("user limit needs an EMAIL.");
      const limit = parseLimit(value);
      const user = await execute(ctx, SYSTEM_ACTOR, setCardLimit, { email }, { limit });
      process.stdout.write(`${user.email} may now own ${limit < 0 ? "any number of" : limit} cards.\n`);
      return;
    }
    case "list": {
      for (const record of await listUsers(ctx, SYSTEM_ACTOR)) {
        process.stdout.write(
          `${record._id}  ${record.email}  trees=${record.treesCount} cards=${record.cardsCount} limit=${record.limit}  since ${record.createdAt}\n`,
        );
      }
      return;
    }
    default:
      throw new UsageError(`Unknown user command "${sub ?? ""}".`);
  }
}
