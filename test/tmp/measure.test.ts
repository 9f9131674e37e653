import { beforeAll, expect, it } from "vitest";
import { buildCard, buildTree, buildUser } from "../helpers/api.js";
import { describeInBrowser, useWorld } from "../browser/harness.js";

describeInBrowser("measure", () => {
  const session = useWorld();
  const urls: Record<string, string> = {};
  beforeAll(async () => {
    const owner = await buildUser(session.world.server.url, "m");
    const variants: Record<string, string> = {
      a51200: "_a".repeat(25_600),
    };
    for (const [name, content] of Object.entries(variants)) {
      const tree = await buildTree(owner, { name, seed: "# x" });
      await buildCard(owner, tree._id, { parentId: null, position: 5, content });
      const url = `m-${name}`.toLowerCase();
      expect((await owner.put(`/api/trees/${tree._id}`, { publicUrl: url })).status).toBe(200);
      urls[name] = url;
    }
  });
  it("times", async () => {
    for (const [name, url] of Object.entries(urls)) {
      const context = await session.world.newContext();
      const page = await context.newPage();
      await page.addInitScript(() => {
        (window as any).__long = [];
        new PerformanceObserver((list) => { for (const e of list.getEntries()) (window as any).__long.push(Math.round(e.duration)); }).observe({ type: "longtask", buffered: true });
      });
      const cdp = await context.newCDPSession(page);
      await cdp.send("Profiler.enable");
      await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
      await cdp.send("Profiler.start");
      const t0 = Date.now();
      await page.goto(`/p/${url}`);
      await page.locator(".card-content h1").first().waitFor();
      await page.waitForTimeout(300);
      const { profile } = await cdp.send("Profiler.stop");
      const self = new Map<string, number>();
      const dt = new Map<number, number>();
      profile.samples!.forEach((id: number, i: number) => dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas![i] ?? 0)));
      for (const node of profile.nodes) {
        const k = `${node.callFrame.functionName || "(anon)"} ${node.callFrame.url.split("/").pop()}:${node.callFrame.lineNumber}:${node.callFrame.columnNumber}`;
        self.set(k, (self.get(k) ?? 0) + (dt.get(node.id) ?? 0));
      }
      console.log(name, [...self].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, v]) => `${k}=${Math.round(v / 1000)}ms`).join(" | "));
      const long = await page.evaluate(() => (window as any).__long);
      console.log(name, Date.now() - t0, "ms; long tasks", JSON.stringify(long), await page.locator(".unrendered-note").count());
      await context.close();
    }
  });
});
