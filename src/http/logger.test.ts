import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "./logger.js";

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("createLogger", () => {
  afterEach(() => vi.useRealTimers());

  it("writes the lines of one turn of the event loop together, at its end", async () => {
    const writes: string[] = [];
    const logger = createLogger((text) => writes.push(text));
    logger.info("one", { n: 1 });
    logger.info("two", { n: 2 });
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toHaveLength(1);
    expect(writes[0].split("\n").filter(Boolean).map((line) => JSON.parse(line).message)).toEqual(["one", "two"]);
    logger.info("three");
    await nextTurn();
    expect(writes).toHaveLength(2);
  });

  it("writes an error line at once, after the lines before it", () => {
    const writes: string[] = [];
    const logger = createLogger((text) => writes.push(text));
    logger.info("before");
    logger.error("broke", { code: 7 });
    const lines = writes.join("").split("\n").filter(Boolean).map((line) => JSON.parse(line));
    expect(lines.map((line) => [line.level, line.message])).toEqual([
      ["info", "before"],
      ["error", "broke"],
    ]);
  });

  it("writes a request line exactly as info('request', …) would", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: new Date("2026-11-28T12:34:56.789Z") });
    const lines = [
      { method: "GET", path: "/api/trees/abc/cards", status: 200, ms: 0.123, user: "u1", address: "127.0.0.1" },
      { method: "PUT", path: '/api/"quoted"\\path/\u2028ü\u{1F600}', status: 409, ms: 12, user: null, address: null },
      { method: "POST", path: "/", status: 500, ms: 1e21, user: "x\ny", address: "::ffff:10.0.0.1" },
    ];
    const viaRequest: string[] = [];
    const viaInfo: string[] = [];
    const a = createLogger((text) => viaRequest.push(text));
    const b = createLogger((text) => viaInfo.push(text));
    for (const line of lines) {
      a.request(line);
      b.info("request", { ...line });
    }
    await nextTurn();
    expect(viaRequest.join("")).toBe(viaInfo.join(""));
    expect(viaRequest.join("").split("\n").filter(Boolean).map((line) => JSON.parse(line).path)).toEqual(lines.map((line) => line.path));
  });

  it("writes the lines still waiting when the process exits within their turn", () => {
    const logger = fileURLToPath(new URL("./logger.ts", import.meta.url));
    const script = `import { createLogger } from ${JSON.stringify(logger)}; const log = createLogger(); log.info("last words", { n: 1 }); process.exit(3);`;
    const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 });
    expect(child.status).toBe(3);
    expect(child.stdout.trim().split("\n").map((line) => JSON.parse(line).message)).toEqual(["last words"]);
  });
});
