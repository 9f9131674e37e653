/**
 * The notice connection (src/store/postgres/listener.ts) sending a burst of notices, as
 * failed log-ins do: each is delivered, in order, and the statements go one at a time (pg
 * warns that a query sent while another runs is deprecated; pg 9 refuses it).
 */
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { NoticeListener } from "../../src/store/postgres/listener.js";
import { createTestDatabase } from "../helpers/postgres.js";

const listeners: NoticeListener[] = [];
afterEach(async () => {
  await Promise.all(listeners.splice(0).map((l) => l.close()));
});

describe("the notice connection", () => {
  it("sends a burst of notices one statement at a time, each delivered in order", async () => {
    const url = await createTestDatabase();
    const heard: string[] = [];
    const quiet = { lost: () => undefined, restored: () => undefined };
    const hearing = new NoticeListener(url, ["burst"], { ...quiet, notice: (_channel, payload) => heard.push(payload ?? "") });
    const sending = new NoticeListener(url, ["elsewhere"], { ...quiet, notice: () => undefined });
    listeners.push(hearing, sending);
    await hearing.start();
    await sending.start();

    // How many statements each connection has sent and not yet had answered, at most.
    const running = new Map<pg.Client, number>();
    let mostAtOnce = 0;
    const query = pg.Client.prototype.query;
    const spy = vi.spyOn(pg.Client.prototype, "query").mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const now = (running.get(this) ?? 0) + 1;
      running.set(this, now);
      mostAtOnce = Math.max(mostAtOnce, now);
      const result = (query as (...a: unknown[]) => unknown).apply(this, args);
      const done = () => running.set(this, (running.get(this) ?? 1) - 1);
      if (result instanceof Promise) result.then(done, done);
      else done();
      return result as never;
    });
    try {
      const sent = Array.from({ length: 20 }, (_, i) => `notice ${i}`);
      for (const payload of sent) sending.notify("burst", payload);
      const deadline = Date.now() + 10_000;
      while (heard.length < sent.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(heard).toEqual(sent);
      expect(mostAtOnce).toBe(1);
    } finally {
      spy.mockRestore();
    }
  });
});
