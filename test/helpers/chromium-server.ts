/**
 * One Chromium for a whole vitest run (issue 31): the browser test files connect to it and
 * each opens fresh contexts (its own cookies, storage and service workers), instead of each
 * file launching and closing a Chromium of its own. A launch cost about 2 s of CPU and a
 * connection about a third of that (docs/performance.md), and the run opens about 35 files
 * that drive a browser.
 *
 * test/global-setup.ts starts the broker below in vitest's main process and hands its address
 * to the test files (`provide`/`inject`, key `chromiumBroker`). Chromium itself starts on the
 * first request, so a run without browser tests starts none; if it exits (a crash), the next
 * request starts another. test/browser/harness.ts `sharedBrowser()` asks the broker for the
 * WebSocket address and connects with playwright-core.
 *
 * Tests that need a profile on disk (`launchPersistentContext`: offline.test.ts) still
 * launch their own.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type BrowserServer } from "playwright-core";

/** Debian's Chromium (never a downloaded browser); scripts/test-tools.mjs installs it. */
export const CHROMIUM = "/usr/bin/chromium";

/** The flags every test browser runs with. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

export interface ChromiumBroker {
  /** `http://127.0.0.1:port/`: a GET answers Chromium's WebSocket address, starting it if needed. */
  url: string;
  /** How many Chromium processes the broker has started (1 unless one died). */
  readonly launches: number;
  close(): Promise<void>;
}

export async function startChromiumBroker(): Promise<ChromiumBroker> {
  let current: Promise<BrowserServer> | undefined;
  let launches = 0;
  const launch = (): Promise<BrowserServer> => {
    if (!current) {
      launches += 1;
      const started = chromium.launchServer({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
      current = started;
      started.then(
        (browser) =>
          browser.process().once("exit", () => {
            if (current === started) current = undefined;
          }),
        () => {
          if (current === started) current = undefined;
        },
      );
    }
    return current;
  };
  const server: Server = createServer((req, res) => {
    launch().then(
      (browser) => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(browser.wsEndpoint());
      },
      (error: Error) => {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(`Chromium did not start: ${error.message}`);
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    get launches() {
      return launches;
    },
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const browser = await current?.catch(() => undefined);
      await browser?.close();
    },
  };
}
