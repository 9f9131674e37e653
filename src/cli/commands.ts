/**
 * The administration commands on a data directory (DATA_DIR, default ./data), shared by
 * `npm run cli -- <command>` (src/cli/main.ts) and the single binary (`cardtree <command>`,
 * src/cli/cardtree.ts):
 *
 *   user add EMAIL [--password P] [--limit N]   create an account (works with SIGNUP=off)
 *   user passwd EMAIL [--password P]            set a new password, ending its sessions
 *   user limit EMAIL N                          set the card limit (-1: unlimited)
 *   user list                                   one line per user
 *   import FILE --tree ID [--parent CARD]       import Markdown, JSON, OPML or a .gkw file into a tree
 *   export TREE --format F [-o FILE] [--card ID] [--column N] [--leaves]
 *   backup DIR                                  copy the data, also while the server runs
 *   restore DIR                                 replace the data with a backup (server stopped)
 *   migrate --to postgres [--force]             copy the data into DATABASE_URL, verified
 *
 * Without --password the password is asked for (hidden on a terminal, else one line of
 * standard input).
 */
import { scryptHasherFor } from "../auth/scrypt-hasher.js";
import { loadConfig } from "../config.js";
import { createDomainContext, type DomainContext } from "../domain/context.js";
import { DomainError } from "../shared/errors.js";
import { formatsOffThread } from "../formats/off-thread.js";
import { openStore } from "../store/open-store.js";
import { parseCliArgs, UsageError, type CliArgs } from "./usage.js";
import { backupCommand, restoreCommand } from "./backup-command.js";
import { migrateCommand } from "./migrate-command.js";
import { exportCommand, importCommand } from "./transfer-commands.js";
import { userCommand } from "./user-commands.js";

/** The commands' usage lines, after whatever runs them (`npm run cli --`, `cardtree`). */
export const COMMAND_LINES = [
  "user add EMAIL [--password P] [--limit N]",
  "user passwd EMAIL [--password P]",
  "user limit EMAIL N",
  "user list",
  "import FILE --tree ID [--parent CARD]",
  "export TREE --format txt|md|html|json|docx|impress|opml|gkw [-o FILE] [--card ID] [--column N] [--leaves] [--newlines N] [--start S] [--end S]",
  "backup DIR",
  "restore DIR",
  "migrate --to postgres [--force]",
];

export const COMMANDS = new Set(["user", "import", "export", "backup", "restore", "migrate"]);

const storeCommands: Record<string, (ctx: DomainContext, rest: string[], args: CliArgs) => Promise<void>> = {
  user: userCommand,
  import: importCommand,
  export: exportCommand,
};
// These handle the data directory themselves: a backup must not take the lock a running
// server holds, a restore takes it before replacing the files, and a migration reads it
// (under its lock) whatever STORE says.
const fileCommands: Record<string, (config: ReturnType<typeof loadConfig>, rest: string[], args: CliArgs) => Promise<void>> = {
  backup: backupCommand,
  restore: restoreCommand,
  migrate: migrateCommand,
};

/**
 * Runs one command line. Writes its output and errors itself.
 * @returns the exit code: 0 done, 1 failed (a domain error, a file problem), 2 bad usage.
 */
export async function runCommand(argv: string[], usage: string): Promise<number> {
  let args: CliArgs;
  try {
    args = parseCliArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${usage}\n`);
    return 2;
  }
  const [command, ...rest] = args.positionals;
  if (args.values.help || !command) {
    process.stdout.write(`${usage}\n`);
    return command || args.values.help ? 0 : 2;
  }
  const fail = (err: unknown) => {
    process.stderr.write(`${(err as Error).message}\n`);
    if (err instanceof UsageError) process.stderr.write(`${usage}\n`);
    return err instanceof UsageError ? 2 : 1;
  };
  if (fileCommands[command]) {
    try {
      await fileCommands[command](loadConfig(), rest, args);
      return 0;
    } catch (err) {
      return fail(err);
    }
  }
  const handler = storeCommands[command];
  if (!handler) {
    process.stderr.write(`Unknown command "${command}".\n${usage}\n`);
    return 2;
  }
  const config = loadConfig();
  const { store, locks, treeLocks } = await openStore(config, { listen: false });
  try {
    const adapters = { formats: formatsOffThread(config.exports), hasher: scryptHasherFor(config.limits), shared: { ownerLocks: locks, treeLocks } };
    await handler(createDomainContext(store, config, adapters), rest, args);
    return 0;
  } catch (err) {
    if (err instanceof DomainError || err instanceof UsageError) return fail(err);
    throw err;
  } finally {
    await locks?.close();
    await treeLocks?.close();
    await store.close();
  }
}
