/**
 * Before any test: bundle the browser client, so the servers the tests start serve the
 * client as it is in the working tree (`npm test` alone is enough on a fresh checkout).
 */
import { buildWeb } from "../scripts/build-web.mjs";

export default async function setup(): Promise<void> {
  await buildWeb();
}
