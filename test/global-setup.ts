/**
 * Before any test: compile the server (dist/server.mjs) and the CLI (dist/cli.mjs) and bundle
 * the browser client, so the servers and CLI runs the tests start run the code of the working
 * tree, compiled as `npm start` runs it (`npm test` alone is enough on a fresh checkout). Each test project inherits this
 * set-up from the root config and vitest runs it once per project, in one process: the
 * bundles are built the first time only. The compiled export worker's file is handed to the
 * test processes (CARDTREE_TEST_EXPORT_WORKER, read by helpers/in-process-server.ts).
 *
 * It also starts the run's one Chromium broker (helpers/chromium-server.ts): the browser
 * test files connect to one Chromium, started on the first file's request, instead of each
 * launching its own. Its address reaches them as `inject("chromiumBroker")`.
 */
import type { TestProject } from "vitest/node";
import { buildCli, buildServer } from "../scripts/build.mjs";
import { buildWeb } from "../scripts/build-web.mjs";
import { startChromiumBroker, type ChromiumBroker } from "./helpers/chromium-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's Chromium broker (helpers/chromium-server.ts); absent when the set-up did not run. */
    chromiumBroker?: string;
  }
}

/** One broker for the projects of the run, closed when the last project's teardown runs. */
let broker: Promise<ChromiumBroker> | undefined;
let users = 0;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  users += 1;
  broker ??= startChromiumBroker();
  project.provide("chromiumBroker", (await broker).url);
  if (!process.env.CARDTREE_TEST_BUILT) {
    const [server] = await Promise.all([buildServer(), buildCli(), buildWeb()]);
    const worker = server.files.find((file) => /[/\\]server-worker-pool-\w+\.mjs$/.test(file));
    if (worker) process.env.CARDTREE_TEST_EXPORT_WORKER = worker;
    process.env.CARDTREE_TEST_BUILT = "1";
  }
  return async () => {
    users -= 1;
    if (users > 0 || !broker) return;
    const closing = broker;
    broker = undefined;
    await (await closing).close();
  };
}
