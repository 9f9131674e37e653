/**
 * Instance settings kept beside the data (`DATA_DIR/settings.json`, through lowdb): the
 * secret that keys session ids and the credential cache, made on first start.
 */
import { randomBytes } from "node:crypto";
import { chmod } from "node:fs/promises";
import path from "node:path";
import { Low } from "lowdb";
import { JSONFile } from "lowdb/node";
import { PRIVATE_FILE } from "./file-modes.js";

export interface Settings {
  secret: string;
  createdAt: string;
}

export async function loadSettings(dataDir: string): Promise<Settings> {
  // Not lowdb's JSONFilePreset: under NODE_ENV=test it silently keeps the data in memory,
  // and a restarted server would then make a new secret and lose every session.
  const file = path.join(dataDir, "settings.json");
  const db = new Low<Partial<Settings>>(new JSONFile(file), {});
  await db.read();
  if (!db.data.secret) {
    db.data.secret = randomBytes(32).toString("hex");
    db.data.createdAt = new Date().toISOString();
    await db.write();
  }
  // lowdb writes with the umask's mode; the secret keys every session.
  await chmod(file, PRIVATE_FILE);
  return db.data as Settings;
}
