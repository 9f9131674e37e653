import { lstat, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { lockDataDir } from "./data-dir-lock.js";

const freshDir = () => mkdtemp(path.join(os.tmpdir(), "cardtree-lock-"));

describe("lockDataDir", () => {
  it("refuses a second holder, naming the first, until the first lets go; the socket goes with it", async () => {
    const dir = await freshDir();
    const unlock = await lockDataDir(dir);
    expect((await lstat(path.join(dir, "LOCK"))).isSocket()).toBe(true);
    expect((await lstat(path.join(dir, "LOCK"))).mode & 0o777).toBe(0o600);
    await expect(lockDataDir(dir)).rejects.toThrow(`in use by process ${process.pid}`);
    await unlock();
    await unlock();
    await expect(lstat(path.join(dir, "LOCK"))).rejects.toMatchObject({ code: "ENOENT" });
    const again = await lockDataDir(dir);
    await again();
  });

  it("takes over a LOCK file of the old PID format, even naming a live process", async () => {
    const dir = await freshDir();
    await writeFile(path.join(dir, "LOCK"), String(process.pid));
    const unlock = await lockDataDir(dir);
    expect((await lstat(path.join(dir, "LOCK"))).isSocket()).toBe(true);
    await unlock();
  });

  it("says so when the directory's path is too long for a socket", async () => {
    const dir = path.join(os.tmpdir(), "x".repeat(120));
    await expect(lockDataDir(dir)).rejects.toThrow(/too long/);
  });
});
