/**
 * `npm run cli -- <command>`: the administration commands of src/cli/commands.ts, run from
 * the sources with tsx. The single binary runs the same commands as `cardtree <command>`.
 */
import { COMMAND_LINES, runCommand } from "./commands.js";

const USAGE = `usage: npm run cli -- <command>\n${COMMAND_LINES.map((line) => `  ${line}`).join("\n")}`;

process.exitCode = await runCommand(process.argv.slice(2), USAGE).catch((err) => {
  process.stderr.write(`${(err as Error).message}\n`);
  return 1;
});
