/**
 * Before any test: compile the server (dist/server.mjs) and bundle the browser client, so
 * the servers the tests start run the code of the working tree, compiled as `npm start` runs
 * it (`npm test` alone is enough on a fresh checkout). Each test project inherits this
 * set-up from the root config and vitest runs it once per project, in one process: the
 * bundles are built the first time only. The compiled export worker's file is handed to the
 * test processes (CARDTREE_TEST_EXPORT_WORKER, read by helpers/in-process-server.ts).
 */
import { buildServer } from "../scripts/build.mjs";
import { buildWeb } from "../scripts/build-web.mjs";

export default async function setup(): Promise<void> {
  if (process.env.CARDTREE_TEST_BUILT) return;
  const [server] = await Promise.all([buildServer(), buildWeb()]);
  const worker = server.files.find((file) => /[/\\]server-worker-pool-\w+\.mjs$/.test(file));
  if (worker) process.env.CARDTREE_TEST_EXPORT_WORKER = worker;
  process.env.CARDTREE_TEST_BUILT = "1";
}
