/**
 * Starts the real server for integration tests as a child process (for restarts, kills
 * and environment settings), with a fresh data directory under the system temp folder,
 * and under `CARDTREE_TEST_STORE=postgres` a fresh database of its own (helpers/postgres.ts;
 * a restart on the same data directory finds the same database).
 * The process runs the compiled server, dist/server.mjs, which test/global-setup.ts builds
 * from the working tree before any test: it starts in less than half the time the sources
 * take under tsx (docs/performance.md), and the suites start hundreds of them. `CARDTREE_TEST_SERVER=tsx` runs
 * the sources under tsx instead (to compare, or to debug without a build), also for the CLI (`CLI_ARGS`).
 * `in-process-server.ts` starts it inside the test process instead. They are two modules
 * so that suites using only child processes do not load the whole server.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { createTestDatabase, storeEnv } from "./postgres.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

const UNDER_TSX = process.env.CARDTREE_TEST_SERVER === "tsx";

/** Node's arguments for a test server: the compiled server, with stack traces naming src/ files. */
const SERVER_ARGS = UNDER_TSX ? ["--import", "tsx", "src/main.ts"] : ["--enable-source-maps", "dist/server.mjs"];

/**
 * Node's arguments for `npm run cli` (run from the repository's root, then the command's own):
 * the compiled CLI, dist/cli.mjs (test/global-setup.ts builds it), which costs a third of the
 * CPU of the sources under tsx per run; `CARDTREE_TEST_SERVER=tsx` runs src/cli/main.ts under tsx.
 */
export const CLI_ARGS = UNDER_TSX ? ["--import", "tsx", "src/cli/main.ts"] : ["--enable-source-maps", "dist/cli.mjs"];

export async function freshDataDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), "cardtree-test-"));
}

export interface TestServer {
  url: string;
  dataDir: string;
  /** Lines the server printed (logs), newest last. */
  output: string[];
  process: ChildProcess;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
  /** SIGKILL: a crash, nothing flushed. */
  kill(): Promise<void>;
  /** Stops (gracefully) and starts again on the same data directory. */
  restart(): Promise<TestServer>;
}

export async function startTestServer(
  options: {
    env?: Record<string, string>;
    dataDir?: string;
    /** Node's arguments; `SERVER_ARGS` unless given (`["scripts/start.mjs"]` is `npm start`). */
    args?: string[];
    startTimeoutMs?: number;
  } = {},
): Promise<TestServer> {
  const dataDir = options.dataDir ?? (await freshDataDir());
  // A test that names its store (STORE=nedb to make a data directory to migrate) gets it.
  const store = options.env?.STORE ? {} : await storeEnv(dataDir);
  const child = spawn(process.execPath, options.args ?? SERVER_ARGS, {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, LOG: "on", ...store, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const remember = (line: string) => {
    output.push(line);
    if (output.length > 2000) output.shift();
  };
  createInterface({ input: child.stderr! }).on("line", remember);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`server did not start:\n${output.join("\n")}`));
    }, options.startTimeoutMs ?? 30_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output.join("\n")}`));
    });
    createInterface({ input: child.stdout! }).on("line", (line) => {
      remember(line);
      if (line.includes('"message":"listening"')) {
        clearTimeout(timer);
        resolve(JSON.parse(line).url);
      }
    });
  });
  // "close": the process has exited and its output has been read to the end.
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const server: TestServer = {
    url,
    dataDir,
    output,
    process: child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    restart: async () => {
      await server.stop();
      return startTestServer({ ...options, dataDir });
    },
  };
  return server;
}

/**
 * Two server processes on one fresh PostgreSQL database (SPEC §11), as the multi-process
 * suites need them; the caller stops both.
 */
export async function twoProcessesOnOneDatabase(): Promise<{ databaseUrl: string; a: TestServer; b: TestServer }> {
  const databaseUrl = await createTestDatabase();
  const env = { STORE: "postgres", DATABASE_URL: databaseUrl };
  const [a, b] = [await startTestServer({ env }), await startTestServer({ env })];
  return { databaseUrl, a, b };
}
