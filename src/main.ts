/**
 * The server's entry: serves, and on SIGTERM or SIGINT finishes in-flight requests and
 * flushes the store before exiting. `npm start` runs it compiled (dist/server.mjs, built by
 * scripts/start.mjs when stale); `npm run dev` and the tests run it with tsx, and then the
 * browser client is built here when its bundle is missing.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "./config.js";
import { startServer, WEB_DIR } from "./server.js";

const config = loadConfig();
if (!existsSync(path.join(WEB_DIR, "index.html"))) {
  // A computed specifier, so esbuild leaves the builder (and esbuild) out of dist/server.mjs;
  // from dist/ as from src/, ../scripts is the repository's.
  const builder = new URL("../scripts/build-web.mjs", import.meta.url).href;
  const { buildWeb } = (await import(builder)) as { buildWeb(): Promise<void> };
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
