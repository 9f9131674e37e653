/**
 * `import FILE --tree ID` and `export TREE --format F -o FILE`, as the system actor: the
 * operator at the machine, whom the policy lets do what a tree's owner may. The imported
 * cards still count towards the tree owner's card limit.
 */
import { execute } from "../domain/command.js";
import { createReadStream } from "node:fs";
import { stat, writeFile } from "node:fs/promises";
import type { DomainContext } from "../domain/context.js";
import { exportTreeAs } from "../domain/export.js";
import { importSeed } from "../domain/import.js";
import { RECORD_ID } from "../shared/ids.js";
import { SYSTEM_ACTOR } from "../domain/policy.js";
import { UsageError, type CliArgs } from "./usage.js";

function treeIdFrom(treeId: string | undefined): string {
  if (!treeId || !RECORD_ID.test(treeId)) throw new UsageError("Name the tree by its 24-character id.");
  return treeId;
}

/** A progress line on a terminal (a bar), plain lines otherwise. */
function progress(label: string) {
  const tty = process.stderr.isTTY;
  let last = -1;
  return {
    update(done: number, total: number) {
      const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
      if (percent === last) return;
      last = percent;
      if (tty) {
        const width = 30;
        const filled = Math.round((percent / 100) * width);
        process.stderr.write(`\r${label} [${"#".repeat(filled)}${" ".repeat(width - filled)}] ${percent}%`);
        if (percent === 100) process.stderr.write("\n");
      } else if (percent % 25 === 0) {
        process.stderr.write(`${label}: ${percent}%\n`);
      }
    },
  };
}

async function readWithProgress(file: string): Promise<string> {
  const { size } = await stat(file);
  const bar = progress(`Reading ${file}`);
  const chunks: Buffer[] = [];
  let read = 0;
  for await (const chunk of createReadStream(file)) {
    chunks.push(chunk as Buffer);
    read += (chunk as Buffer).length;
    bar.update(read, size);
  }
  bar.update(size, size);
  return Buffer.concat(chunks).toString("utf8");
}

export async function importCommand(ctx: DomainContext, rest: string[], args: CliArgs): Promise<void> {
  const [file] = rest;
  if (!file) throw new UsageError("import needs a FILE.");
  const treeId = treeIdFrom(args.values.tree);
  const seed = await readWithProgress(file);
  process.stderr.write("Parsing and writing (all or nothing)...\n");
  const cards = await execute(ctx, SYSTEM_ACTOR, importSeed, { treeId }, { parentId: args.values.parent ?? null, seed });
  process.stdout.write(`Imported ${cards.length} cards into ${args.values.tree}.\n`);
}

export async function exportCommand(ctx: DomainContext, rest: string[], args: CliArgs): Promise<void> {
  const treeId = treeIdFrom(rest[0]);
  if (!args.values.format) throw new UsageError("export needs --format.");
  const query: Record<string, string> = {};
  for (const [flag, key] of [["card", "cardId"], ["column", "column"], ["newlines", "newlines"], ["start", "start"], ["end", "end"]] as const) {
    const value = args.values[flag];
    if (value !== undefined) query[key] = value;
  }
  if (args.values.leaves) query.leaves = "1";
  const result = await exportTreeAs(ctx, SYSTEM_ACTOR, treeId, args.values.format, query);
  const output = args.values.output ?? result.filename;
  if (output === "-") process.stdout.write(result.body);
  else {
    await writeFile(output, result.body);
    process.stderr.write(`Wrote ${output}.\n`);
  }
}
