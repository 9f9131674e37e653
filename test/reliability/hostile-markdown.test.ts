/**
 * Issue 12, the Markdown and export cost part: an anonymous reader of a public tree must not
 * be able to stall the server or break the page with one hostile card. The server runs as a
 * child process, so `/healthz` measures its event loop and not this test's.
 *
 * Probes: a 100 KB card of `_a` repeated (quadratic in marked: 15 s per export on this
 * machine, the server stalled meanwhile), 20,000 nested `>` (stack overflow: a 500), and
 * `start`/`end` of 7,000 characters on a 5,000-card tree (70 MB per 14 KB request). Limits:
 * docs/reliability.md, "Markdown and export cost".
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { whileProbingHealth } from "../exports/health-probe.js";
import { describeInBrowser, useWorld } from "../browser/harness.js";

const QUADRATIC = "_a".repeat(50_000);
const DEEP_QUOTE = (levels: number) => `${">".repeat(levels)} deep`;

/** Makes `tree` public under a fresh address; returns that address. */
async function publish(api: Api, treeId: string): Promise<string> {
  const publicUrl = `hostile-${Math.random().toString(36).slice(2, 10)}`;
  const res = await api.put(`/api/trees/${treeId}`, { publicUrl });
  if (res.status !== 200) throw new Error(`publish: ${res.status} ${res.text}`);
  return publicUrl;
}

async function anonymousGet(url: string) {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get("content-type") ?? "", body: Buffer.from(await res.arrayBuffer()) };
}

describe("hostile Markdown in a public tree, exported anonymously", () => {
  let server: TestServer;
  let treeId: string;
  let treeUrl: string;
  let deepTreeId: string;

  beforeAll(async () => {
    server = await startTestServer();
    const owner = await buildUser(server.url, "hostile");
    treeId = (await buildTree(owner, { name: "Quadratic", seed: "# Before\n\nA normal card." }))._id;
    await buildCard(owner, treeId, { parentId: null, position: 5, content: QUADRATIC });
    treeUrl = await publish(owner, treeId);
    deepTreeId = (await buildTree(owner, { name: "Deep", seed: "# Fine\n\nStill here." }))._id;
    await buildCard(owner, deepTreeId, { parentId: null, position: 5, content: DEEP_QUOTE(20_000) });
    await publish(owner, deepTreeId);
    // GraphQL loads its modules on first use (a main-thread cost of its own, not the export's).
    await fetch(`${server.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "{ __typename }" }),
    });
  }, 120_000);
  afterAll(() => server?.stop());

  // Before the fix each took 6-15 s with /healthz unanswered all along.
  for (const format of ["html", "docx", "impress"]) {
    it(`the ${format} export of a 100 KB card of "_a" answers quickly and /healthz stays responsive`, async () => {
      const { result, ms, worst, mainCpuMs } = await whileProbingHealth(
        server.url,
        () => anonymousGet(`${server.url}/api/export/${treeId}.${format}`),
        server.process.pid,
      );
      console.log(`${format}: ${Math.round(ms)} ms, slowest /healthz ${Math.round(worst)} ms, the event loop's CPU ${mainCpuMs} ms`);
      expect(result.status).toBe(200);
      expect(ms).toBeLessThan(8_000);
      // The event loop's CPU holds on a busy machine; /healthz's wall time is bounded generously
      // (the kernel may give the loop's thread to other processes; health-probe.ts).
      expect(mainCpuMs).toBeLessThan(500);
      expect(worst).toBeLessThan(2_000);
      if (format === "html") {
        const html = result.body.toString("utf8");
        // The hostile card is shown as its text, escaped, with a note; the other card is rendered.
        expect(html).toContain('<h1 id="before">Before</h1>');
        expect(html).toContain("_a_a_a_a");
        expect(html).toMatch(/class="unrendered-note"/);
      }
    });
  }

  it("the GraphQL export of the same card answers quickly and /healthz stays responsive", async () => {
    const query = `query ($url: String!) { publicTree(url: $url) { export(format: HTML) { body } } }`;
    const { result, ms, worst, mainCpuMs } = await whileProbingHealth(
      server.url,
      async () => {
        const res = await fetch(`${server.url}/graphql`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ query, variables: { url: treeUrl } }),
        });
        return { status: res.status, body: (await res.json()) as any };
      },
      server.process.pid,
    );
    console.log(`graphql html: ${Math.round(ms)} ms, slowest /healthz ${Math.round(worst)} ms, the event loop's CPU ${mainCpuMs} ms`);
    expect(result.status).toBe(200);
    expect(result.body.errors).toBeUndefined();
    expect(result.body.data.publicTree.export.body).toContain("_a_a_a_a");
    expect(ms).toBeLessThan(8_000);
    expect(mainCpuMs).toBeLessThan(500);
    expect(worst).toBeLessThan(2_000);
  });

  it("20,000 nested > export as html, docx and impress with 200, the other card rendered", async () => {
    for (const format of ["html", "docx", "impress"]) {
      const res = await anonymousGet(`${server.url}/api/export/${deepTreeId}.${format}`);
      expect(res.status, format).toBe(200);
      if (format === "html") {
        const html = res.body.toString("utf8");
        expect(html).toContain('<h1 id="fine">Fine</h1>');
        expect(html).toContain("&gt;&gt;&gt;&gt; deep");
      }
    }
  });

  it("refuses start/end decoration that would multiply a 5,000-card tree, with details", async () => {
    const owner = await buildUser(server.url, "decorated");
    const seed = JSON.stringify(Array.from({ length: 5_000 }, (_, i) => ({ content: `card ${i}` })));
    const tree = await buildTree(owner, { name: "Many", seed });
    await publish(owner, tree._id);
    const long = "x".repeat(7_000);
    const anonymous = new Api(server.url);
    const refused = await anonymous.get(`/api/export/${tree._id}.txt?start=${long}&end=${long}`);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe("invalid_request");
    expect(refused.body.details.map((d: { path: string }) => d.path).sort()).toEqual(["end", "start"]);
    // Within the limits the output stays a small multiple of the tree's own text.
    const treeText = (await anonymous.get(`/api/export/${tree._id}.txt`)).text.length;
    const most = await anonymous.get(`/api/export/${tree._id}.md?start=${"s".repeat(100)}&end=${"e".repeat(100)}&newlines=10`);
    expect(most.status).toBe(200);
    expect(most.text.length).toBeLessThan(30 * treeText);
    const tooMany = await anonymous.get(`/api/export/${tree._id}.txt?newlines=100`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.details[0].path).toBe("newlines");
  }, 60_000);
});

describe("exports in the compiled server (npm start)", { timeout: 120_000 }, () => {
  // The worker loads its module from the bundle's chunk (src/formats/export/worker-pool.ts):
  // were that chunk missing or the server's own entry, these exports would fail or hang.
  it("runs html, docx and impress exports in its worker", async () => {
    const server = await startTestServer({ args: ["scripts/start.mjs"], startTimeoutMs: 100_000 });
    try {
      const owner = await buildUser(server.url, "compiled");
      const tree = await buildTree(owner, { name: "Compiled", seed: "# Title\n\nSome *text*." });
      await buildCard(owner, tree._id, { parentId: null, position: 5, content: DEEP_QUOTE(20_000) });
      for (const format of ["html", "docx", "impress"]) {
        const res = await fetch(`${server.url}/api/export/${tree._id}.${format}`, { headers: { authorization: owner.authHeader! } });
        expect(res.status, format).toBe(200);
        expect((await res.arrayBuffer()).byteLength, format).toBeGreaterThan(100);
      }
    } finally {
      await server.stop();
    }
    expect(server.process.exitCode, server.output.join("\n")).toBe(0);
  });
});

describeInBrowser("hostile Markdown in the browser client", () => {
  const session = useWorld();
  let owner: Api & { user: any };
  let treeId: string;
  let publicUrl: string;

  beforeAll(async () => {
    owner = await buildUser(session.world.server.url, "deep-quote");
    treeId = (await buildTree(owner, { name: "Deep in the browser", seed: "# Neighbour\n\nStill readable." }))._id;
    await buildCard(owner, treeId, { parentId: null, position: 5, content: DEEP_QUOTE(3_000) });
    await buildCard(owner, treeId, { parentId: null, position: 6, content: QUADRATIC.slice(0, 20_000) });
    publicUrl = await publish(owner, treeId);
  });

  it("a public page with a 3,000-nested > card still renders the other cards", async () => {
    const context = await session.world.newContext();
    const page = await context.newPage();
    session.watch(page);
    await page.goto(`/p/${publicUrl}`);
    await page.locator(".card-content h1", { hasText: "Neighbour" }).waitFor();
    expect(await page.locator(".unrendered-note").count()).toBe(2);
    await context.close();
  });

  it("a public page with a 50 KB card of _a_a… and one of 100,000 characters shows both as text, unparsed, and renders the rest (issue 25)", async () => {
    const api = await buildUser(session.world.server.url, "quadratic");
    const tree = await buildTree(api, { name: "Emphasis", seed: "# Neighbour\n\n**Still** rendered." });
    const fifty = "_a".repeat(25_600);
    const hundred = "a_".repeat(50_000);
    await buildCard(api, tree._id, { parentId: null, position: 5, content: fifty });
    await buildCard(api, tree._id, { parentId: null, position: 6, content: hundred });
    await buildCard(api, tree._id, { parentId: null, position: 7, content: "_a".repeat(300) });
    const url = await publish(api, tree._id);
    const context = await session.world.newContext();
    const page = await context.newPage();
    session.watch(page);
    await page.goto(`/p/${url}`);
    await page.locator(".card-content strong", { hasText: "Still" }).waitFor();
    // The two over the guard's limits are their own text in a <pre>, never given to marked;
    // the small one under them is rendered as Markdown.
    const shown = await page.locator(".card-content pre.unrendered").evaluateAll((pres) => pres.map((pre) => pre.textContent));
    expect(shown).toEqual([fifty, hundred]);
    expect(await page.locator(".card-content em").count()).toBeGreaterThan(0);
    await context.close();
  });

  it("a tree page with the same card renders too", async () => {
    const context = await session.world.newContext();
    const login = await context.request.post("/api/login", { data: owner.credentials });
    expect(login.status()).toBe(200);
    const page = await context.newPage();
    session.watch(page);
    await page.goto(`/trees/${treeId}`);
    await page.locator(".card-content h1", { hasText: "Neighbour" }).waitFor();
    expect(await page.locator(".unrendered-note").count()).toBeGreaterThanOrEqual(1);
    await context.close();
  });
});
