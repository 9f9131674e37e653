/**
 * The embedded store's idempotency log (idempotency-file.ts) across restarts: kept answers
 * come back, a torn last line is dropped, and a rewrite after a sweep keeps what is kept;
 * an answer kept lazily is served at once and written later without a flush of its own.
 */
import { appendFile, mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { IdempotencyRecord } from "../domain/ports/store.js";
import { nodeFileSystem, type FileSystem } from "./file-system.js";
import { openIdempotencyFile } from "./idempotency-file.js";

let dir: string;
let file: string;
const quiet = () => undefined;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "cardtree-idempotency-"));
  file = path.join(dir, "idempotency.log");
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const record = (key: string, createdAt = "2026-01-01T00:00:00.000Z", expiresAt = "2026-01-02T00:00:00.000Z"): IdempotencyRecord => ({
  userId: "a".repeat(24),
  key,
  fingerprint: `fp-${key}`,
  claim: `claim-${key}`,
  leaseUntil: "2026-01-01T00:00:30.000Z",
  createdAt,
  expiresAt,
});
const answer = (text: string) => ({ status: 201, headers: { "content-type": "application/json" }, body: Buffer.from(text) });

async function keep(keys: Awaited<ReturnType<typeof openIdempotencyFile>>, r: IdempotencyRecord, text: string) {
  expect(await keys.claim(r)).toBeNull();
  await keys.complete(r.userId, r.key, r.claim!, answer(text));
}

describe("idempotency.log", () => {
  it("keeps answers across a restart; running claims are not kept (their process is gone)", async () => {
    const keys = await openIdempotencyFile(file, quiet);
    await keep(keys, record("done"), '{"done":true}');
    await keys.claim(record("running"));
    await keys.close();
    const again = await openIdempotencyFile(file, quiet);
    const kept = await again.claim({ ...record("done"), claim: "other" });
    expect(kept?.answer?.status).toBe(201);
    expect(Buffer.from(kept!.answer!.body).toString()).toBe('{"done":true}');
    expect(kept?.claim).toBeUndefined();
    expect(await again.claim(record("running"))).toBeNull();
    await again.close();
  });

  it("drops a torn last line (an append cut by a crash) and appends after it cleanly", async () => {
    const keys = await openIdempotencyFile(file, quiet);
    await keep(keys, record("whole"), "1");
    await keys.close();
    await appendFile(file, '{"k":"torn","r":{"userId":');
    const logged: string[] = [];
    const again = await openIdempotencyFile(file, (message) => logged.push(message));
    expect(logged).toEqual([expect.stringContaining("torn")]);
    await keep(again, record("after"), "2");
    await again.close();
    const lines = (await readFile(file, "utf8")).trimEnd().split("\n");
    expect(lines.map((l) => JSON.parse(l).k)).toEqual([`${"a".repeat(24)} whole`, `${"a".repeat(24)} after`]);
  });

  it("sweeps many keys in slices, other work running between them, and two sweeps at once drop each key once", async () => {
    const keys = await openIdempotencyFile(file, quiet, { sync: "off" });
    // Kept lazily (no append of their own each): 12,000 answers, the first 11,000 expired by the sweep's time.
    for (let i = 0; i < 12_000; i++) {
      const r = record(`k-${i}`, "2026-01-01T00:00:00.000Z", i < 11_000 ? "2026-01-01T01:00:00.000Z" : "2026-01-02T00:00:00.000Z");
      expect(await keys.claim(r)).toBeNull();
      expect(keys.completeLazilyNow!(r.userId, r.key, r.claim!, answer(`${i}`))).toBe(true);
    }
    let ranMeanwhile = false;
    const first = keys.sweep("2026-01-01T03:00:00.000Z", { keys: 100_000, bytes: 1 << 30 });
    setImmediate(() => (ranMeanwhile = true));
    const second = keys.sweep("2026-01-01T03:00:00.000Z", { keys: 100_000, bytes: 1 << 30 });
    const [one, two] = await Promise.all([first, second]);
    expect(ranMeanwhile).toBe(true);
    expect(one + two).toBe(11_000);
    expect(await keys.claim({ ...record("k-11500"), claim: "x" })).toMatchObject({ answer: { status: 201 } });
    expect(await keys.claim(record("k-5"))).toBeNull();
    await keys.close();
  });

  it("rewrites itself once swept lines outnumber kept ones, keeping the kept", async () => {
    const keys = await openIdempotencyFile(file, quiet);
    for (let i = 0; i < 1200; i++) await keep(keys, record(`old-${i}`, "2026-01-01T00:00:00.000Z", "2026-01-01T01:00:00.000Z"), `${i}`);
    await keep(keys, record("new", "2026-01-01T02:00:00.000Z"), "new");
    expect(await keys.sweep("2026-01-01T03:00:00.000Z", { keys: 100, bytes: 1 << 20 })).toBe(1200);
    expect((await readFile(file, "utf8")).trimEnd().split("\n")).toHaveLength(1);
    await keep(keys, record("later", "2026-01-01T04:00:00.000Z"), "later");
    await keys.close();
    const again = await openIdempotencyFile(file, quiet);
    expect((await again.claim({ ...record("new"), claim: "x" }))?.answer?.status).toBe(201);
    expect((await again.claim({ ...record("later"), claim: "x" }))?.answer?.status).toBe(201);
    expect(await again.claim(record("old-5"))).toBeNull();
    await again.close();
  });

  it("serves an answer kept lazily at once, and writes it soon after without a flush of its own, or at close", async () => {
    let flushes = 0;
    const counting: FileSystem = {
      ...nodeFileSystem,
      open: async (name, flags) => {
        const handle = await nodeFileSystem.open(name, flags);
        const datasync = handle.datasync.bind(handle);
        handle.datasync = () => {
          flushes++;
          return datasync();
        };
        return handle;
      },
    };
    const keys = await openIdempotencyFile(file, quiet, { fs: counting });
    const before = flushes;
    const r = record("lazy");
    expect(await keys.claim(r)).toBeNull();
    await keys.complete(r.userId, r.key, r.claim!, answer("lazily"), { lazily: true });
    // Answered from memory at once; not written yet, and never flushed on its own.
    expect(Buffer.from((await keys.claim({ ...r, claim: "other" }))!.answer!.body).toString()).toBe("lazily");
    expect(await readFile(file, "utf8")).toBe("");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await readFile(file, "utf8")).trimEnd().split("\n").map((l) => JSON.parse(l).k)).toEqual([`${"a".repeat(24)} lazy`]);
    expect(flushes).toBe(before);
    // An answer kept the ordinary way is flushed; a lazy one completed meanwhile goes with it.
    const late = record("late");
    expect(await keys.claim(late)).toBeNull();
    await keys.complete(late.userId, late.key, late.claim!, answer("late"), { lazily: true });
    await keep(keys, record("flushed"), "flushed");
    expect(flushes).toBe(before + 1);
    expect((await readFile(file, "utf8")).trimEnd().split("\n")).toHaveLength(3);
    // At close, what waits is written.
    const last = record("at-close");
    expect(await keys.claim(last)).toBeNull();
    await keys.complete(last.userId, last.key, last.claim!, answer("closing"), { lazily: true });
    await keys.close();
    const again = await openIdempotencyFile(file, quiet);
    expect(Buffer.from((await again.claim({ ...last, claim: "x" }))!.answer!.body).toString()).toBe("closing");
    await again.close();
  });

  it("claims and keeps a lazily kept answer at once (no promise), and replays it from its line byte for byte", async () => {
    const keys = await openIdempotencyFile(file, quiet);
    const r = record("now");
    expect(keys.claimNow!(r)).toBeNull();
    // Running: the same key again meets the claim, at once.
    expect(keys.claimNow!({ ...r, claim: "other" })).toMatchObject({ claim: r.claim, fingerprint: r.fingerprint });
    const body = Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]); // not UTF-8: kept in base64
    const headers = { "content-type": "application/json", etag: 'W/"3-quoted\\"' };
    // Another claim's answer is not kept: the caller is told, and the key still runs.
    expect(keys.completeLazilyNow!(r.userId, r.key, "not-the-claim", { status: 201, headers, body })).toBe(false);
    expect(keys.claimNow!({ ...r, claim: "other" })).toMatchObject({ claim: r.claim });
    expect(keys.completeLazilyNow!(r.userId, r.key, r.claim!, { status: 201, headers, body })).toBe(true);
    const replay = keys.claimNow!({ ...r, claim: "again" })!;
    expect(replay).toMatchObject({ userId: r.userId, key: r.key, fingerprint: r.fingerprint, createdAt: r.createdAt, expiresAt: r.expiresAt });
    expect(replay.claim).toBeUndefined();
    expect(replay.answer!.status).toBe(201);
    expect(replay.answer!.headers).toEqual(headers);
    expect(Buffer.compare(Buffer.from(replay.answer!.body), body)).toBe(0);
    // Each replay is its own copy.
    replay.answer!.headers.etag = "changed";
    expect(keys.claimNow!({ ...r, claim: "third" })!.answer!.headers).toEqual(headers);
    await keys.close();
    const again = await openIdempotencyFile(file, quiet);
    expect(Buffer.compare(Buffer.from((await again.claim({ ...r, claim: "x" }))!.answer!.body), body)).toBe(0);
    await again.close();
  });
});
