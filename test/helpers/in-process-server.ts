/**
 * Starts the real server inside the test process, for tests that need to look inside
 * (count store reads, set a user's limit), with a fresh data directory.
 */
import { rm } from "node:fs/promises";
import { loadConfig } from "../../src/config.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { freshDataDir } from "./server.js";

export interface InProcessServer extends RunningServer {
  dataDir: string;
  stop(): Promise<void>;
}

export async function startInProcessServer(env: Record<string, string> = {}): Promise<InProcessServer> {
  const dataDir = await freshDataDir();
  const config = loadConfig({ PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, LOG: "off", ...env });
  const running = await startServer(config);
  return {
    ...running,
    dataDir,
    stop: async () => {
      await running.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
