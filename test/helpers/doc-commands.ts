/**
 * Runs the shell examples of a Markdown document as written, for the tests that keep the
 * README and docs/ honest: the commands of its ```sh blocks, each a step, in one bash
 * session, with each step's output kept apart.
 */
import { execFile } from "node:child_process";

/** The commands of the ```sh blocks that `keep` accepts: continuation lines joined, comments dropped. */
export function shellCommands(markdown: string, keep: (block: string) => boolean = () => true): string[] {
  const blocks = [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).filter(keep);
  const commands: string[] = [];
  for (const block of blocks) {
    let pending = "";
    for (const line of block.split("\n")) {
      if (pending === "" && (line.trim() === "" || line.trimStart().startsWith("#"))) continue;
      pending += pending === "" ? line : `\n${line}`;
      if (!line.endsWith("\\") && balancedQuotes(pending)) {
        commands.push(pending);
        pending = "";
      }
    }
    if (pending !== "") commands.push(pending);
  }
  return commands;
}

/** A command may span lines inside a quoted string (the README's GraphQL example does). */
function balancedQuotes(command: string): boolean {
  let single = false;
  let double = false;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (c === "\\" && !single) i++;
    else if (c === "'" && !double) single = !single;
    else if (c === '"' && !single) double = !double;
  }
  return !single && !double;
}

/**
 * Runs `commands` in order in one `bash` (after `prelude`), stopping at the first that fails.
 * @returns each command's standard output.
 * @throws Error with the output so far when a command fails.
 */
export async function runSteps(
  commands: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; prelude?: string; timeoutMs?: number },
): Promise<string[]> {
  const script = ["set -euo pipefail", options.prelude ?? "", ...commands.flatMap((command, i) => [`printf '\\n@@STEP ${i}\\n'`, command])].join("\n");
  const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number | null }>((resolve) => {
    const child = execFile(
      "bash",
      ["-c", script],
      { cwd: options.cwd, env: options.env ?? process.env, maxBuffer: 16 * 1024 * 1024, timeout: options.timeoutMs ?? 120_000 },
      (err, stdout, stderr) => resolve({ stdout, stderr, code: err ? ((err as { code?: number }).code ?? 1) : 0 }),
    );
    child.stdin!.end();
  });
  const outputs = stdout.split(/\n@@STEP \d+\n/).slice(1);
  if (code !== 0) {
    const failed = commands[outputs.length - 1] ?? "(the prelude)";
    throw new Error(`failed (${code}) at:\n${failed}\nits output:\n${outputs.at(-1) ?? ""}\nstderr:\n${stderr}`);
  }
  return outputs;
}
