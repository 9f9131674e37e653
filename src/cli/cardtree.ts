/**
 * The single binary's entry (`npm run package` bundles this file and everything it loads
 * into dist/cardtree): `cardtree serve` runs the server as `npm start` does, the other
 * commands are the CLI's (src/cli/commands.ts), all configured by the same environment
 * variables (README "Configuration"). It also runs from a checkout:
 * `npx tsx src/cli/cardtree.ts --help`.
 */
import sea from "node:sea";
import packageJson from "../../package.json" with { type: "json" };
import { installWorkerStarter } from "../formats/worker-start.js";
import { COMMAND_LINES, COMMANDS, runCommand } from "./commands.js";
import { startEmbeddedWorker } from "./embedded-worker.js";

const HELP = `Cardtree ${packageJson.version}: trees of Markdown cards, served over REST, GraphQL and a browser client.

usage: cardtree <command>
  serve                         serve on PORT (3000), data in DATA_DIR (./data); SIGTERM stops cleanly
${COMMAND_LINES.map((line) => `  ${line}`).join("\n")}
  --version                     print the version
  --help                        this text

Settings are environment variables (PORT, HOST, DATA_DIR, SIGNUP, TRUST_PROXY, ...), as
for npm start; the README's "Configuration" lists them all. Run the user, import, export
and restore commands with the server stopped; backup also while it runs.`;

/**
 * Node warns once when the binary's script requires a module that is not built in. Ours are
 * all bundled; the one such require left is @whatwg-node/fetch probing for the optional
 * node-libcurl in a try/catch (it falls back to Node's own HTTP), and the warning would only
 * alarm whoever reads the log. Node prints warnings from a 'warning' listener it installs
 * before our script runs: that listener now hears every warning but this one.
 */
function silenceOptionalRequireWarning(): void {
  if (!sea.isSea()) return;
  const printers = process.listeners("warning");
  process.removeAllListeners("warning");
  process.on("warning", (warning) => {
    if (warning.message.startsWith("Currently the require() provided to the main script embedded into single-executable")) return;
    for (const print of printers) print(warning);
  });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--version" || command === "-v" || command === "version") {
    process.stdout.write(`cardtree ${packageJson.version} (Node ${process.version})\n`);
    return 0;
  }
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  if (command === "serve") {
    if (rest.length > 0) {
      process.stderr.write(`serve takes no arguments; it is configured by environment variables.\n${HELP}\n`);
      return 2;
    }
    const { serve } = await import("./serve-command.js");
    await serve();
    // Serving: the exit code is set when a signal stops the server.
    return 0;
  }
  if (command && COMMANDS.has(command)) return runCommand(argv, HELP);
  process.stderr.write(`${command ? `Unknown command "${command}".\n` : ""}${HELP}\n`);
  return 2;
}

silenceOptionalRequireWarning();
// Worker threads (exports, big imports) start from the script embedded in the binary: it has
// no module files to start them from. From a checkout they start as `npm start`'s do.
if (sea.isSea()) installWorkerStarter(startEmbeddedWorker);
// No top-level await: the bundle is CommonJS (Node 20's single executables run only that).
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
