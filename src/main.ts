/**
 * `npm start`: builds the browser client when its bundle is missing, serves, and on
 * SIGTERM or SIGINT finishes in-flight requests and flushes the store before exiting.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "./config.js";
import { startServer, WEB_DIR } from "./server.js";

const config = loadConfig();
if (!existsSync(path.join(WEB_DIR, "index.html"))) {
  const { buildWeb } = (await import("../scripts/build-web.mjs")) as { buildWeb(): Promise<void> };
  await buildWeb();
}
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
