/**
 * Instance settings kept beside the data (`DATA_DIR/settings.json`, through lowdb): the
 * secret that keys session ids and the credential cache, made on first start.
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { JSONFilePreset } from "lowdb/node";

export interface Settings {
  secret: string;
  createdAt: string;
}

export async function loadSettings(dataDir: string): Promise<Settings> {
  const db = await JSONFilePreset<Partial<Settings>>(path.join(dataDir, "settings.json"), {});
  if (!db.data.secret) {
    db.data.secret = randomBytes(32).toString("hex");
    db.data.createdAt = new Date().toISOString();
    await db.write();
  }
  return db.data as Settings;
}
