/**
 * `migrate --to postgres [--force]`: copies the embedded data directory (DATA_DIR) into the
 * PostgreSQL database at DATABASE_URL, then verifies the copy (src/store/postgres/
 * copy-from-nedb.ts). Refuses a database that already holds records unless --force, which
 * replaces them. The server must be stopped: the data directory's lock is taken.
 */
import type { Config } from "../config.js";
import { copyNedbToPostgres } from "../store/postgres/copy-from-nedb.js";
import { openPostgresStore } from "../store/postgres-store.js";
import { UsageError, type CliArgs } from "./usage.js";

export async function migrateCommand(config: Config, rest: string[], args: CliArgs): Promise<void> {
  if (rest.length > 0 || args.values.to !== "postgres") {
    throw new UsageError("migrate copies the embedded store into PostgreSQL: migrate --to postgres [--force].");
  }
  const databaseUrl = process.env.DATABASE_URL ?? "";
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new Error("Set DATABASE_URL to the target database (postgres://user:password@host:5432/database).");
  }
  const target = await openPostgresStore(databaseUrl, { log: () => undefined });
  try {
    const report = await copyNedbToPostgres(config.dataDir, target.pool, { force: args.values.force === true });
    for (const [name, { source, target: copied }] of Object.entries(report.counts)) {
      process.stdout.write(`${name}: ${source} in ${config.dataDir}, ${copied} in the database\n`);
    }
    process.stdout.write(`trees verified by checksum: ${report.treesVerified}\n`);
    const countsDiffer = Object.values(report.counts).some((c) => c.source !== c.target);
    if (countsDiffer || report.treesMismatched.length > 0) {
      throw new Error(
        `The copy does not match the data directory${report.treesMismatched.length > 0 ? ` (trees ${report.treesMismatched.join(", ")})` : ""}; do not switch to it.`,
      );
    }
    process.stdout.write(
      `Copied ${config.dataDir} into PostgreSQL and verified it.${report.secretCopied ? " Cookie sessions stay valid." : ""} Start with STORE=postgres.\n`,
    );
  } finally {
    await target.close();
  }
}
