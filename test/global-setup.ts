/**
 * Before any test: bundle the browser client, so the servers the tests start serve the
 * client as it is in the working tree (`npm test` alone is enough on a fresh checkout).
 * Each test project inherits this set-up from the root config and vitest runs it once per
 * project, in one process: the bundle is built the first time only.
 */
import { buildWeb } from "../scripts/build-web.mjs";

export default async function setup(): Promise<void> {
  if (process.env.CARDTREE_TEST_WEB_BUILT) return;
  await buildWeb();
  process.env.CARDTREE_TEST_WEB_BUILT = "1";
}
