/**
 * `cardtree serve` and `npm start`: serves until SIGTERM or SIGINT, then finishes in-flight
 * requests and flushes the store before exiting.
 */
import { loadConfig } from "../config.js";
import { startServer } from "../server.js";

export async function serve(): Promise<void> {
  const config = loadConfig();
  const server = await startServer(config);
  server.logger.info("listening", { url: server.url, port: server.port, dataDir: config.dataDir });

  let stopping = false;
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, async () => {
      if (stopping) return;
      stopping = true;
      server.logger.info("stopping", { signal });
      await server.close();
      process.exit(0);
    });
  }
}
