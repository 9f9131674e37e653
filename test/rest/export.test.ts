import JSZip from "jszip";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildCard, buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

const SEED = "# One\n\nIntro.\n\n## One.a\n\nText a.\n\n## One.b\n\n# Two\n\n## Two.a";

/** A tree of five cards (plus one trashed) owned by a new user. */
async function exampleTree(name = "Exported") {
  const alice = await buildUser(server.url);
  const tree = await buildTree(alice, { name, seed: SEED });
  const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
  const trashed = await buildCard(alice, tree._id, { parentId: cards[0]._id, content: "TRASHED", position: 99 });
  await alice.delete(`/api/trees/${tree._id}/cards/${trashed._id}`);
  return { alice, tree, cards };
}

async function download(api: Api, path: string) {
  return api.download(path);
}

describe("GET /api/export/:treeId.:format", () => {
  it("txt and md: contents in tree order joined by a blank line, trash left out", async () => {
    const { alice, tree } = await exampleTree();
    for (const format of ["txt", "md"]) {
      const res = await alice.get(`/api/export/${tree._id}.${format}`);
      expect(res.status).toBe(200);
      expect(res.text).toBe("# One\n\nIntro.\n\n## One.a\n\nText a.\n\n## One.b\n\n# Two\n\n## Two.a");
      expect(res.text).not.toContain("TRASHED");
    }
    expect((await alice.get(`/api/export/${tree._id}.txt`)).headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect((await alice.get(`/api/export/${tree._id}.md`)).headers.get("content-type")).toMatch(/^text\/markdown/);
  });

  it("honours cardId, column, both, newlines, start and end", async () => {
    const { alice, tree, cards } = await exampleTree();
    const base = `/api/export/${tree._id}.txt`;
    expect((await alice.get(`${base}?cardId=${cards[0]._id}`)).text).toBe("# One\n\nIntro.\n\n## One.a\n\nText a.\n\n## One.b");
    expect((await alice.get(`${base}?column=2`)).text).toBe("## One.a\n\nText a.\n\n## One.b\n\n## Two.a");
    expect((await alice.get(`${base}?column=2&cardId=${cards[0]._id}`)).text).toBe("## One.a\n\nText a.\n\n## One.b");
    expect((await alice.get(`${base}?column=9`))).toMatchObject({ status: 200, text: "" });
    expect((await alice.get(`${base}?column=1&newlines=1`)).text).toBe("# One\n\nIntro.\n# Two");
    expect((await alice.get(`${base}?column=1&start=%3C&end=%3E`)).text).toBe("<# One\n\nIntro.>\n\n<# Two>");
  });

  it("answers 400 for an unknown format or a bad column, 404 for an unknown card", async () => {
    const { alice, tree } = await exampleTree();
    const pdf = await alice.get(`/api/export/${tree._id}.pdf`);
    expect(pdf.status).toBe(400);
    expect(pdf.body.error).toBe("invalid_request");
    for (const column of ["0", "-1", "x", "1.5"]) {
      expect((await alice.get(`/api/export/${tree._id}.txt?column=${column}`)).status, column).toBe(400);
    }
    expect((await alice.get(`/api/export/${tree._id}.txt?cardId=zzzzzzzzzzzzzzzzzzzzzzzz`)).status).toBe(404);
  });

  it("html: a standalone page titled with the tree name, Markdown rendered and sanitized", async () => {
    const { alice, tree } = await exampleTree("Café <script>");
    await buildCard(alice, tree._id, {
      content: '**bold** <img src=x onerror="alert(1)"> [x](javascript:alert(2)) <script>alert(3)</script>',
      position: 50,
    });
    const res = await alice.get(`/api/export/${tree._id}.html`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.text).toMatch(/^<!DOCTYPE html>/i);
    expect(res.text).toContain("<title>Café &#60;script&#62;</title>");
    expect(res.text).toContain("<strong>bold</strong>");
    expect(res.text).not.toMatch(/<script|onerror|javascript:/i);
  });

  it("json: nested cards; importing it elsewhere and exporting again gives the same bytes", async () => {
    const { alice, tree } = await exampleTree();
    const json = await alice.get(`/api/export/${tree._id}.json`);
    expect(json.status).toBe(200);
    expect(json.body).toEqual([
      { content: "# One\n\nIntro.", children: [{ content: "## One.a\n\nText a." }, { content: "## One.b" }] },
      { content: "# Two", children: [{ content: "## Two.a" }] },
    ]);
    const bob = await buildUser(server.url);
    const copy = (await bob.post("/api/trees", { name: "Round trip", seed: json.text })).body;
    expect((await bob.get(`/api/export/${copy._id}.json`)).text).toBe(json.text);
  });

  it("docx and impress: real Office files with proper names, also for non-ASCII tree names", async () => {
    const { alice, tree } = await exampleTree("Résumé 2026");
    const docx = await download(alice, `/api/export/${tree._id}.docx`);
    expect(docx.status).toBe(200);
    expect(docx.headers.get("content-type")).toBe("application/vnd.openxmlformats-officedocument.wordprocessingml.document");
    expect(docx.headers.get("content-disposition")).toMatch(/^attachment;/);
    expect(docx.headers.get("content-disposition")).toContain("filename*=UTF-8''R%C3%A9sum%C3%A9%202026.docx");
    const document = await (await JSZip.loadAsync(docx.bytes)).file("word/document.xml")!.async("string");
    expect(document).toContain('w:val="Heading1"');
    expect(document).toContain("Text a.");
    expect(document).not.toContain("TRASHED");

    const pptx = await download(alice, `/api/export/${tree._id}.impress`);
    expect(pptx.status).toBe(200);
    expect(pptx.headers.get("content-disposition")).toContain(".pptx");
    const zip = await JSZip.loadAsync(pptx.bytes);
    const slides = Object.keys(zip.files).filter((f) => /^ppt\/slides\/slide\d+\.xml$/.test(f));
    // A title slide, then one per card.
    expect(slides).toHaveLength(6);
  });

  it("every format answers its own Content-Type and an attachment named after the tree", async () => {
    const { alice, tree } = await exampleTree("Notes");
    const expected: Record<string, [string, string]> = {
      txt: ["text/plain", "Notes.txt"],
      md: ["text/markdown", "Notes.md"],
      html: ["text/html", "Notes.html"],
      json: ["application/json", "Notes.json"],
      docx: ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", "Notes.docx"],
      impress: ["application/vnd.openxmlformats-officedocument.presentationml.presentation", "Notes.pptx"],
    };
    for (const [format, [type, filename]] of Object.entries(expected)) {
      const res = await download(alice, `/api/export/${tree._id}.${format}`);
      expect(res.status, format).toBe(200);
      expect(res.headers.get("content-type")?.split(";")[0], format).toBe(type);
      const disposition = res.headers.get("content-disposition") ?? "";
      expect(disposition, format).toMatch(/^attachment;/);
      expect(disposition, format).toContain(`filename="${filename}"`);
    }
  });

  it("json with cardId holds that card with its descendants; with column, that column flat", async () => {
    const { alice, tree, cards } = await exampleTree();
    const base = `/api/export/${tree._id}.json`;
    const one = await alice.get(`${base}?cardId=${cards[0]._id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual([
      { content: "# One\n\nIntro.", children: [{ content: "## One.a\n\nText a." }, { content: "## One.b" }] },
    ]);
    const column = await alice.get(`${base}?column=2`);
    expect(column.status).toBe(200);
    expect(column.body).toEqual([{ content: "## One.a\n\nText a." }, { content: "## One.b" }, { content: "## Two.a" }]);
    expect((await alice.get(`${base}?column=9`)).body).toEqual([]);
  });

  it("a trashed card or another tree's card as cardId is 404, in the error shape", async () => {
    const { alice, tree } = await exampleTree();
    const all = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    const gone = await buildCard(alice, tree._id, { parentId: all[0]._id, content: "GONE", position: 50 });
    await alice.delete(`/api/trees/${tree._id}/cards/${gone._id}`);
    const trashed = await alice.get(`/api/export/${tree._id}.txt?cardId=${gone._id}`);
    expect(trashed.status).toBe(404);
    expect(trashed.body.error).toBe("not_found");
    expect(trashed.text).not.toContain("GONE");
    const other = await buildTree(alice, { seed: "# elsewhere" });
    const [elsewhere] = (await alice.get(`/api/trees/${other._id}/cards`)).body;
    const foreign = await alice.get(`/api/export/${tree._id}.txt?cardId=${elsewhere._id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe("not_found");
  });

  it("a public tree exports without credentials; a private one is 401 to the anonymous and 404 to a stranger", async () => {
    const { alice, tree } = await exampleTree();
    const anon = new Api(server.url);
    const stranger = await buildUser(server.url);
    expect((await anon.get(`/api/export/${tree._id}.txt`)).status).toBe(401);
    expect((await stranger.get(`/api/export/${tree._id}.txt`)).status).toBe(404);
    await alice.put(`/api/trees/${tree._id}`, { publicUrl: `exp-${tree._id.slice(0, 8)}` });
    const res = await anon.get(`/api/export/${tree._id}.md`);
    expect(res.status).toBe(200);
    expect(res.text).toContain("# One");
  });
});

describe("exports off the event loop (issue 12)", () => {
  it("an export past EXPORT_TIMEOUT_MS is 422 limit_reached, and the next export still works", async () => {
    const slow = await startInProcessServer({ EXPORT_TIMEOUT_MS: "1" });
    try {
      const alice = await buildUser(slow.url);
      const tree = await buildTree(alice, { name: "Slow", seed: SEED });
      const res = await alice.get(`/api/export/${tree._id}.docx`);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ error: "limit_reached" });
      expect(res.body.message).toMatch(/narrow it with cardId or column/);
      // Cheap text exports stay on the main thread, so the deadline does not apply to them.
      expect((await alice.get(`/api/export/${tree._id}.md`)).status).toBe(200);
    } finally {
      await slow.stop();
    }
  });

  it("with EXPORT_WORKERS=0 every format is exported on the main thread", async () => {
    const inline = await startInProcessServer({ EXPORT_WORKERS: "0", EXPORT_TIMEOUT_MS: "1" });
    try {
      const alice = await buildUser(inline.url);
      const tree = await buildTree(alice, { name: "Inline", seed: SEED });
      for (const format of ["html", "docx", "impress"]) {
        expect((await alice.get(`/api/export/${tree._id}.${format}`)).status, format).toBe(200);
      }
    } finally {
      await inline.stop();
    }
  });

  it("past EXPORT_QUEUE waiting exports, one more is 429 with Retry-After", async () => {
    const busy = await startInProcessServer({ EXPORT_WORKERS: "1", EXPORT_QUEUE: "0" });
    try {
      const alice = await buildUser(busy.url);
      const tree = await buildTree(alice, { name: "Busy", seed: SEED });
      // The first takes the only worker (which takes a second to start); the second finds no room.
      const [first, second] = await Promise.all([alice.get(`/api/export/${tree._id}.docx`), alice.get(`/api/export/${tree._id}.docx`)]);
      expect([first.status, second.status].sort()).toEqual([200, 429]);
      const refused = first.status === 429 ? first : second;
      expect(refused.body.error).toBe("too_many_requests");
      expect(refused.headers.get("retry-after")).toBe("5");
    } finally {
      await busy.stop();
    }
  });

  it("errors thrown in the worker keep their code and details: an unknown cardId is 404", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "Worker errors", seed: SEED });
    const res = await alice.get(`/api/export/${tree._id}.docx?cardId=${"a".repeat(24)}`);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: "not_found", message: "Card was not found." });
  });
});
