/**
 * One process at a time owns a data directory: NeDB keeps the whole store in memory and
 * appends to its files, so a second writer (a CLI run while the server is up) would
 * corrupt both views.
 *
 * The lock is a Unix domain socket, `DATA_DIR/LOCK`, that the owner listens on. Binding
 * fails while the path exists; a connect then tells a live owner (it answers) from a stale
 * socket left by a process that died (refused: the kernel closed the listener with the
 * process, zombie or not). No PID is trusted, so a PID that now belongs to another
 * process (PIDs repeat from one container start to the next) cannot keep the lock held.
 * A `LOCK` file from an older version, which named a PID, refuses connections too and is
 * taken over.
 *
 * Where the file system cannot hold a socket, the lock is an abstract socket named after
 * the directory's device and inode instead: released by the kernel just the same, though
 * seen only by processes in the same network namespace.
 */
import { randomBytes } from "node:crypto";
import { chmod, lstat, rename, stat, unlink } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { PRIVATE_FILE } from "./file-modes.js";

/** sun_path holds 108 bytes with the terminating NUL. */
const MAX_SOCKET_PATH = 107;
/** Binding errors of file systems that cannot hold a socket. */
const NO_SOCKETS_HERE = new Set(["EPERM", "EOPNOTSUPP", "ENOTSUP", "EINVAL"]);

export type Unlock = () => Promise<void>;

function listen(address: string): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    // A process asking whether the lock is held learns who holds it, then is hung up on.
    const server = net.createServer((socket) => socket.end(`${process.pid}\n`));
    server.once("error", reject);
    server.listen(address, () => {
      server.off("error", reject);
      // The lock must not keep a finished CLI command alive.
      server.unref();
      resolve(server);
    });
  });
}

/** The holder's PID (or "?") when a live process listens on `address`; null when none does. */
function holderOf(address: string): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = net.connect(address);
    let answer = "";
    socket.setEncoding("utf8");
    socket.setTimeout(5000, () => socket.destroy());
    socket.on("data", (chunk) => (answer += chunk));
    socket.once("close", () => resolve(answer.trim() || "?"));
    socket.once("error", (err: NodeJS.ErrnoException) => {
      socket.removeAllListeners("close");
      // Refused: nobody listens (a stale socket, or an old-style LOCK file). Gone: removed meanwhile.
      resolve(err.code === "ECONNREFUSED" || err.code === "ENOENT" ? null : "?");
    });
  });
}

/** `DATA_DIR/LOCK`, relative to the working directory when the absolute path is too long for a socket. */
function lockPath(dataDir: string): string {
  const absolute = path.join(path.resolve(dataDir), "LOCK");
  if (Buffer.byteLength(absolute) <= MAX_SOCKET_PATH) return absolute;
  const relative = path.relative(process.cwd(), absolute);
  if (Buffer.byteLength(relative) <= MAX_SOCKET_PATH) return relative;
  throw new Error(`The data directory path ${dataDir} is too long for its lock socket (${MAX_SOCKET_PATH} bytes at most).`);
}

function inUse(dataDir: string, holder: string): Error {
  const who = /^\d+$/.test(holder) ? `process ${holder}` : "another process";
  return new Error(`The data directory ${dataDir} is in use by ${who}. Stop it first.`);
}

/**
 * Removes the socket at `file` if it is still the one found stale (`found`): moved aside
 * first, so that a lock another process has bound meanwhile is put back, not deleted.
 */
async function removeStale(file: string, found: { ino: number; dev: number }): Promise<void> {
  const aside = `${file}.stale-${randomBytes(6).toString("hex")}`;
  try {
    await rename(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  const moved = await lstat(aside);
  if (moved.ino === found.ino && moved.dev === found.dev) await unlink(aside);
  else await rename(aside, file);
}

async function lockAbstract(dataDir: string): Promise<Unlock> {
  const { dev, ino } = await stat(dataDir);
  try {
    const server = await listen(`\0cardtree-data-dir-${dev}-${ino}`);
    return () => new Promise<void>((resolve) => server.close(() => resolve()));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") throw inUse(dataDir, "?");
    throw err;
  }
}

/**
 * Takes the data directory for this process until the returned function is called or the
 * process ends (however it ends).
 * @throws Error naming the process that holds the directory.
 */
export async function lockDataDir(dataDir: string): Promise<Unlock> {
  const file = lockPath(dataDir);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const server = await listen(file);
      await chmod(file, PRIVATE_FILE);
      let released: Promise<void> | undefined;
      // Closing the listener removes the socket file too.
      return () => (released ??= new Promise<void>((resolve) => server.close(() => resolve())));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "";
      if (NO_SOCKETS_HERE.has(code)) return lockAbstract(dataDir);
      if (code !== "EADDRINUSE") throw err;
    }
    const found = await lstat(file).catch(() => null);
    if (!found) continue;
    const holder = await holderOf(file);
    if (holder !== null) throw inUse(dataDir, holder);
    await removeStale(file, found);
  }
  throw new Error(`Could not lock the data directory ${dataDir}; try again.`);
}
