/**
 * The data-directory lock (issue 12): one process owns a data directory, and a lock left
 * by a process that died does not stop the next start, even when its PID now belongs to
 * another live process (PIDs repeat from one container start to the next) or the holder
 * is a zombie. Two servers on one directory still refuse the second, the CLI still
 * refuses a directory a server holds, and `backup` still works beside a running server.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { buildUser } from "../helpers/api.js";
import { CLI_ARGS, freshDataDir, startTestServer, type TestServer } from "../helpers/server.js";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
const cli = (dataDir: string, ...args: string[]) =>
  run(process.execPath, [...CLI_ARGS, ...args], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir } });

let servers: TestServer[] = [];
let children: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const child of children) child.kill("SIGKILL");
  servers = [];
  children = [];
});

/** A data directory with users in it, left by a server that was killed (its LOCK stays). */
async function crashedDataDir(): Promise<string> {
  const dataDir = await freshDataDir();
  const first = await startTestServer({ dataDir, env: { LOG: "off" } });
  await buildUser(first.url);
  await first.kill();
  return dataDir;
}

describe("a stale lock", () => {
  it("left by a killed server does not stop the next one", async () => {
    const dataDir = await crashedDataDir();
    servers.push(await startTestServer({ dataDir, env: { LOG: "off" } }));
  }, 60_000);

  it("naming a PID that now belongs to another live process (here the test's own, then a sleep) does not stop the server", async () => {
    const dataDir = await crashedDataDir();
    // A LOCK as the PID-file lock wrote it, its PID since reused.
    await rm(path.join(dataDir, "LOCK"), { force: true });
    await writeFile(path.join(dataDir, "LOCK"), String(process.pid));
    const s = await startTestServer({ dataDir, env: { LOG: "off" } });
    await s.kill();
    const sleeper = spawn("sleep", ["60"], { stdio: "ignore" });
    children.push(sleeper);
    await rm(path.join(dataDir, "LOCK"), { force: true });
    await writeFile(path.join(dataDir, "LOCK"), String(sleeper.pid));
    servers.push(await startTestServer({ dataDir, env: { LOG: "off" } }));
  }, 60_000);

  it("held by a server that was killed but not reaped (a zombie) does not stop the next one", async () => {
    const dataDir = await freshDataDir();
    // The shell starts the server in the background, then becomes `sleep`, which never
    // reaps it: once killed, the server stays a zombie for as long as the sleep runs.
    const parent = spawn("sh", ["-c", "node --import tsx src/main.ts & echo pid=$!; exec sleep 60"], {
      cwd: ROOT,
      env: { ...process.env, PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, LOG: "off" },
      stdio: ["ignore", "pipe", "ignore"],
    });
    children.push(parent);
    const lines = createInterface({ input: parent.stdout! });
    const serverPid = await new Promise<number>((resolve, reject) => {
      let pid = 0;
      const timer = setTimeout(() => reject(new Error("the server did not start")), 30_000);
      lines.on("line", (line) => {
        if (line.startsWith("pid=")) pid = Number(line.slice(4));
        if (line.includes('"message":"listening"')) {
          clearTimeout(timer);
          resolve(pid);
        }
      });
    });
    process.kill(serverPid, "SIGKILL");
    await expect.poll(() => readFile(`/proc/${serverPid}/stat`, "utf8").then((stat) => stat.split(") ")[1][0]), { timeout: 5000 }).toBe("Z");
    servers.push(await startTestServer({ dataDir, env: { LOG: "off" } }));
  }, 60_000);
});

describe("a live lock", () => {
  it("refuses a second server and the CLI, while backup works beside the server", async () => {
    const dataDir = await freshDataDir();
    const s = await startTestServer({ dataDir, env: { LOG: "off" } });
    servers.push(s);
    await buildUser(s.url);
    await expect(startTestServer({ dataDir, env: { LOG: "off" } })).rejects.toThrow(/in use/);
    await expect(cli(dataDir, "user", "list")).rejects.toMatchObject({ stderr: expect.stringContaining("in use") });
    const backup = await cli(dataDir, "backup", path.join(await freshDataDir(), "b"));
    expect(backup.stdout).toMatch(/users\.db/);
    // The server is still serving after all that.
    await buildUser(s.url);
  }, 90_000);
});
