/**
 * Before any test: compile the server (dist/server.mjs) and bundle the browser client, so
 * the servers the tests start run the code of the working tree, compiled as `npm start` runs
 * it (`npm test` alone is enough on a fresh checkout). Each test project inherits this
 * set-up from the root config and vitest runs it once per project, in one process: the
 * bundles are built the first time only.
 */
import { buildServer } from "../scripts/build.mjs";
import { buildWeb } from "../scripts/build-web.mjs";

export default async function setup(): Promise<void> {
  if (process.env.CARDTREE_TEST_BUILT) return;
  await Promise.all([buildServer(), buildWeb()]);
  process.env.CARDTREE_TEST_BUILT = "1";
}
