/**
 * Images from other hosts (issue 25, REMOTE_IMAGES): a card in a public tree can name an
 * image on any host, which would learn each reader's address. By default (`click`) a public
 * page fetches nothing from that host until the reader clicks the image's button, while the
 * members' tree page loads it; `block` shows images from the server's own address only, on
 * every page, and the CSP holds even a script to that. A second HTTP server on another port
 * plays the remote host and counts what it is asked.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, type Api } from "../helpers/api.js";
import { describeInBrowser, loggedInPage, useWorld, type LoggedInPage } from "./harness.js";

const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");

/** The other host: serves one PNG and remembers each request's path. */
async function imageHost(): Promise<{ url: string; asked: string[]; close(): Promise<void> }> {
  const asked: string[] = [];
  const server: Server = createServer((req, res) => {
    asked.push(req.url ?? "");
    res.writeHead(200, { "content-type": "image/png", "cache-control": "no-store" }).end(PNG);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, asked, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function publicTreeWithImages(owner: Api, hostUrl: string, name: string): Promise<{ treeId: string; publicUrl: string }> {
  const seed = `# Pictures\n\n![a cat](${hostUrl}/${name}.png)\n\n# Local\n\n![a dot](data:image/png;base64,${PNG.toString("base64")})`;
  const tree = await buildTree(owner, { name, seed });
  const publicUrl = `${name}-${Date.now().toString(36)}`;
  expect((await owner.put(`/api/trees/${tree._id}`, { publicUrl })).status).toBe(200);
  return { treeId: tree._id, publicUrl };
}

describeInBrowser("remote images, by default (click to load on public pages)", () => {
  const session = useWorld();
  let host: Awaited<ReturnType<typeof imageHost>>;
  let owner: LoggedInPage;
  let tree: { treeId: string; publicUrl: string };

  beforeAll(async () => {
    host = await imageHost();
    owner = await loggedInPage(session.world, "pictures");
    session.watch(owner.page);
    tree = await publicTreeWithImages(owner.api, host.url, "clicked");
  });
  afterAll(() => host.close());

  it("a public page asks the other host for nothing until the reader clicks, then shows the image", async () => {
    const context = await session.world.newContext();
    const page = await context.newPage();
    session.watch(page);
    await page.goto(`/p/${tree.publicUrl}`);
    const button = page.locator(".card-content button.remote-image");
    await button.waitFor();
    expect(await button.textContent()).toBe(`Load “a cat” from ${new URL(host.url).host}`);
    // The data: image is the page's own and shows at once.
    await expect.poll(() => page.locator('.card-content img[alt="a dot"]').evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(1);
    await page.waitForTimeout(300);
    expect(host.asked).toEqual([]);
    expect(await page.locator(".card-content img[alt='a cat']").count()).toBe(0);

    await button.click();
    await expect.poll(() => page.locator(".card-content img[alt='a cat']").evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(1);
    expect(host.asked).toEqual(["/clicked.png"]);
    await context.close();
  });

  it("the members' tree page loads the image as written", async () => {
    host.asked.length = 0;
    await owner.page.goto(`/trees/${tree.treeId}`);
    await expect.poll(() => owner.page.locator(".card-content img[alt='a cat']").evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(1);
    expect(host.asked).toEqual(["/clicked.png"]);
    expect(await owner.page.locator(".card-content .remote-image").count()).toBe(0);
  });
});

describeInBrowser("remote images with REMOTE_IMAGES=block (this server's images only)", () => {
  const session = useWorld({ serverEnv: { REMOTE_IMAGES: "block" }, allowErrors: [/Content Security Policy/] });
  let host: Awaited<ReturnType<typeof imageHost>>;
  let owner: LoggedInPage;
  let tree: { treeId: string; publicUrl: string };

  beforeAll(async () => {
    host = await imageHost();
    owner = await loggedInPage(session.world, "blocked");
    session.watch(owner.page);
    tree = await publicTreeWithImages(owner.api, host.url, "blocked");
  });
  afterAll(() => host.close());

  it("neither the public page nor the tree page asks the other host; each says what it left out", async () => {
    const context = await session.world.newContext();
    const reader = await context.newPage();
    session.watch(reader);
    for (const [page, path] of [
      [reader, `/p/${tree.publicUrl}`],
      [owner.page, `/trees/${tree.treeId}`],
    ] as const) {
      const response = await page.goto(path);
      expect(response?.headers()["content-security-policy"]).toContain("img-src 'self' data: blob:");
      const note = page.locator(".card-content .remote-image-blocked");
      await note.waitFor();
      expect(await note.textContent()).toContain(`“a cat” from ${new URL(host.url).host}, not shown`);
      expect(await page.locator(".card-content button.remote-image").count()).toBe(0);
      await expect.poll(() => page.locator('.card-content img[alt="a dot"]').evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(1);
    }
    // Not even a script gets one past the policy.
    const loaded = await reader.evaluate(
      (src) =>
        new Promise<boolean>((resolve) => {
          const img = new Image();
          img.onload = () => resolve(true);
          img.onerror = () => resolve(false);
          img.src = src;
          document.body.append(img);
        }),
      `${host.url}/scripted.png`,
    );
    expect(loaded).toBe(false);
    expect(host.asked).toEqual([]);
    await context.close();
  });
});
