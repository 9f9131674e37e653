/**
 * `npm start`'s path: scripts/start.mjs builds dist/ when stale and runs the compiled
 * server (dist/server.mjs) in its own process. The other suites run the sources with tsx,
 * so this is what proves the compiled server serves: the API, GraphQL from its lazily
 * loaded chunk, the browser client from dist/web, and a clean stop on SIGTERM.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Api, buildUser } from "../helpers/api.js";
import { freshDataDir } from "../helpers/server.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

// Builds first when dist/ is older than the sources: a few seconds more.
describe("npm start (compiled)", { timeout: 120_000 }, () => {
  it("builds if needed, serves from dist/, and stops on SIGTERM", async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = spawn(process.execPath, ["scripts/start.mjs"], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: await freshDataDir() },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      const deadline = Date.now() + 100_000;
      for (;;) {
        expect(child.exitCode, output).toBeNull();
        const ok = await fetch(`${url}/healthz`).then((res) => res.ok, () => false);
        if (ok) break;
        if (Date.now() > deadline) throw new Error(`no /healthz answer:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }

      const ada = await buildUser(url, "start");
      const index = await ada.get("/api/index");
      expect(index.status).toBe(200);
      expect(index.body.email).toBe(ada.user.email);
      const graphql = await ada.post("/graphql", { query: "{ me { email } }" });
      expect(graphql.body).toEqual({ data: { me: { email: ada.user.email } } });
      const page = await new Api(url).get("/");
      expect(page.status).toBe(200);
      expect(page.text).toContain("/app.js?v=");
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited, output).toBe(0);
    expect(output).toContain('"message":"stopping"');
  });
});
