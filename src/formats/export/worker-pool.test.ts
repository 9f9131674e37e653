/**
 * The export pool's shares (issue 12): anonymous exports take turns on one worker, so a
 * flood of them holds at most one worker's memory and leaves the other worker to signed-in
 * users; they may fill half the line at most. Real workers (this file starts them), real
 * exports; the counts are read right after the calls, when the pool has placed each job.
 */
import { describe, expect, it } from "vitest";
import type { ExportJob } from "../../shared/export-options.js";
import { exportOffThread, exportPoolStats } from "./worker-pool.js";
import { buildTree, CardBuilder } from "./test-factory.js";

function job(anonymous: boolean): ExportJob {
  const b = new CardBuilder(buildTree({ name: "Shared" }));
  for (let i = 0; i < 10; i++) b.card(`# Card ${i}\n\n${"Some *text* here. ".repeat(20)}`);
  return { format: "docx", tree: b.tree, cards: b.cards, options: {}, anonymous };
}

describe("the export pool", () => {
  it("runs one anonymous export at a time, and a signed-in one beside it", async () => {
    const config = { workers: 2, queue: 8, timeoutMs: 60_000, workerMemoryMb: 256 };
    const anonymous = [exportOffThread(config, job(true)), exportOffThread(config, job(true)), exportOffThread(config, job(true))];
    expect(exportPoolStats(config)).toEqual({ workers: 1, busy: 1, anonymousBusy: 1, waiting: 2 });
    const signedIn = exportOffThread(config, job(false));
    // The second worker starts for the signed-in user, not for the anonymous jobs waiting.
    expect(exportPoolStats(config)).toEqual({ workers: 2, busy: 2, anonymousBusy: 1, waiting: 2 });
    const results = await Promise.all([...anonymous, signedIn]);
    expect(results.map((r) => r.filename)).toEqual(Array(4).fill("Shared.docx"));
    expect(exportPoolStats(config)).toMatchObject({ busy: 0, waiting: 0 });
  });

  it("lets anonymous exports fill half the line at most", async () => {
    const config = { workers: 1, queue: 4, timeoutMs: 60_000, workerMemoryMb: 256 };
    const settled = Array.from({ length: 5 }, () => exportOffThread(config, job(true)).then(() => "done", (err: { code?: string }) => err.code));
    // One running, two waiting (half of 4), the other two refused at once.
    expect(exportPoolStats(config)).toMatchObject({ busy: 1, waiting: 2 });
    const signedIn = exportOffThread(config, job(false));
    expect(exportPoolStats(config)).toMatchObject({ waiting: 3 });
    expect(await Promise.all(settled)).toEqual(["done", "done", "done", "too_many_requests", "too_many_requests"]);
    expect((await signedIn).filename).toBe("Shared.docx");
  });
});
