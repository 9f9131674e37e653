/**
 * SPEC §14 over HTTP: OPML and Gingko Writer files as seeds (POST /api/trees, POST
 * .../cards/seed) and as exports (/api/export/:id.opml, .gkw), the leaves flag, and the
 * hostile files (bad XML, DOCTYPE/XXE, entity bombs, too big, too deep) refused with nothing
 * written.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer({ IMPORT_CARD_LIMIT: "500", IMPORT_BODY_LIMIT: String(256 * 1024) });
});
afterAll(() => server.stop());

const contents = (cards: { content: string }[]) => cards.map((c) => c.content);

/** Each card's content with its depth, in tree order. */
function shape(cards: { _id: string; parentId: string | null; content: string }[]): [string, number][] {
  const byId = new Map(cards.map((c) => [c._id, c]));
  const depth = (c: { parentId: string | null }): number => (c.parentId && byId.has(c.parentId) ? 1 + depth(byId.get(c.parentId)!) : 1);
  return cards.map((c) => [c.content, depth(c)]);
}

async function treesOf(api: Api): Promise<number> {
  return (await api.get("/api/trees")).body.length;
}

const WORKFLOWY = `<?xml version="1.0"?>
<opml version="2.0">
  <head>
    <ownerEmail>ada@example.com</ownerEmail>
  </head>
  <body>
    <outline text="Novel" _note="Working title&#10;second line of the note">
      <outline text="Chapter &lt;b&gt;one&lt;/b&gt;" _complete="true">
        <outline text="Scene &amp;amp; setting&lt;br&gt;with a break" />
      </outline>
    </outline>
    <outline text="Ideas" />
  </body>
</opml>`;

describe("OPML seeds", () => {
  it("POST /api/trees with an OPML seed makes the tree from its outlines", async () => {
    const alice = await buildUser(server.url);
    const res = await alice.post("/api/trees", { name: "From Workflowy", seed: WORKFLOWY });
    expect(res.status).toBe(201);
    const cards = (await alice.get(`/api/trees/${res.body._id}/cards`)).body;
    expect(shape(cards)).toEqual([
      ["Novel\nWorking title\nsecond line of the note", 1],
      ["Chapter <b>one</b>", 2],
      ["Scene &amp; setting\nwith a break", 3],
      ["Ideas", 1],
    ]);
  });

  it("POST .../cards/seed puts the outlines under the card, after its children", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "Target", seed: "# Root" });
    const [root] = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    const res = await alice.post(`/api/trees/${tree._id}/cards/seed`, { parentId: root._id, seed: WORKFLOWY });
    expect(res.status).toBe(201);
    expect(res.body[0].parentId).toBe(root._id);
    expect(contents(res.body)).toEqual(["Novel\nWorking title\nsecond line of the note", "Chapter <b>one</b>", "Scene &amp; setting\nwith a break", "Ideas"]);
  });

  const hostile: [string, string, RegExp][] = [
    ["malformed XML", '<?xml version="1.0"?><opml version="2.0"><body><outline text="a"></body></opml>', /line 1, column \d+/],
    ["an external entity (XXE)", '<?xml version="1.0"?><!DOCTYPE opml [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><opml version="2.0"><body><outline text="&xxe;"/></body></opml>', /DOCTYPE/],
    [
      "a billion-laughs entity bomb",
      `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">${Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ""};`.repeat(10)}">`).join("")}]><opml version="2.0"><body><outline text="&lol9;"/></body></opml>`,
      /DOCTYPE/,
    ],
    ["XML that is not OPML", '<?xml version="1.0"?><rss version="2.0"><channel/></rss>', /root element is <rss>/],
  ];
  for (const [what, seed, detail] of hostile) {
    it(`${what} is 400 with a clear message, and nothing is created`, async () => {
      const alice = await buildUser(server.url);
      const tree = await buildTree(alice, { name: "Untouched" });
      const before = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
      const trees = await treesOf(alice);
      const created = await alice.post("/api/trees", { name: "Hostile", seed });
      expect(created.status).toBe(400);
      expect(created.body.error).toBe("invalid_request");
      expect(created.body.message).toMatch(/^This OPML file cannot be imported: /);
      expect(JSON.stringify(created.body)).toMatch(detail);
      const seeded = await alice.post(`/api/trees/${tree._id}/cards/seed`, { seed });
      expect(seeded.status).toBe(400);
      expect(await treesOf(alice)).toBe(trees);
      expect((await alice.get(`/api/trees/${tree._id}/cards`)).body).toEqual(before);
      expect(JSON.stringify(created.body)).not.toContain("root:");
    });
  }

  it("an OPML file past the import size is 413, and one too deep for the card limit is 413, nothing created", async () => {
    const alice = await buildUser(server.url);
    const trees = await treesOf(alice);
    const big = `<?xml version="1.0"?><opml version="2.0"><body>${'<outline text="x"/>'.repeat(20_000)}</body></opml>`;
    const tooBig = await alice.post("/api/trees", { name: "Big", seed: big });
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error).toBe("payload_too_large");
    const deep = `<?xml version="1.0"?><opml version="2.0"><body>${'<outline text="x">'.repeat(1000)}${"</outline>".repeat(1000)}</body></opml>`;
    const tooDeep = await alice.post("/api/trees", { name: "Deep", seed: deep });
    expect(tooDeep.status).toBe(413);
    expect(tooDeep.body.message).toMatch(/1000 cards; at most 500/);
    expect(await treesOf(alice)).toBe(trees);
  });

  it("a big OPML seed is read on a worker thread, off the event loop: its errors keep their details", async () => {
    const alice = await buildUser(server.url);
    // Past 64 KiB a seed goes to the worker pool; the XML error is found at its end.
    const seed = `<?xml version="1.0"?><opml version="2.0"><body>${'<outline text="padding"/>\n'.repeat(4000)}<outline text="a"></body></opml>`;
    const res = await alice.post("/api/trees", { name: "Worker", seed });
    expect(res.status).toBe(400);
    expect(res.body.details[0].message).toMatch(/^line 4001, column \d+: /);
  });

  it("with a 1 ms deadline, a big OPML seed fails as a worker's job does: the parse did not run on the event loop", async () => {
    const strict = await startInProcessServer({ EXPORT_TIMEOUT_MS: "1" });
    try {
      const alice = await buildUser(strict.url);
      const seed = `<?xml version="1.0"?><opml version="2.0"><body>${'<outline text="padding"/>\n'.repeat(4000)}</body></opml>`;
      expect((await alice.post("/api/trees", { name: "Deadline", seed })).status).toBe(422);
      expect((await alice.post("/api/trees", { name: "Small", seed: '<opml version="2.0"><body><outline text="fine"/></body></opml>' })).status).toBe(201);
    } finally {
      await strict.stop();
    }
  });
});

describe("Gingko Writer seeds", () => {
  const ids = { a: "gkwcard0000000000000000a", a1: "gkwcard000000000000000a1", b: "gkwcard0000000000000000b" };
  const file = `<gingko-card id="${ids.a}">\n\n# Act one\n\n<gingko-card id="${ids.a1}">\n\nThe opening.\n\n</gingko-card>\n<gingko-card id="7">\n\nGingko's own id\n\n</gingko-card>\n</gingko-card>\n<gingko-card id="${ids.b}">\n\n# Act two\n\n</gingko-card>`;

  it("keeps the file's card ids when they are free and of our form, and makes new ones for the rest", async () => {
    const alice = await buildUser(server.url);
    const res = await alice.post("/api/trees", { name: "From Gingko Writer", seed: file });
    expect(res.status).toBe(201);
    const cards = (await alice.get(`/api/trees/${res.body._id}/cards`)).body;
    expect(shape(cards)).toEqual([["# Act one", 1], ["The opening.", 2], ["Gingko's own id", 2], ["# Act two", 1]]);
    expect(cards.map((c: any) => c._id)).toEqual([ids.a, ids.a1, expect.stringMatching(/^[a-z0-9]{24}$/), ids.b]);
    expect(cards[2]._id).not.toBe("7");
  });

  it("a second import of the same file gets new ids, and the first tree's cards stay where they are", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const first = await alice.post("/api/trees", { name: "First", seed: file.replaceAll("gkwcard", "gkwcarx") });
    const before = (await alice.get(`/api/trees/${first.body._id}/cards`)).body;
    const second = await bob.post("/api/trees", { name: "Second", seed: file.replaceAll("gkwcard", "gkwcarx") });
    expect(second.status).toBe(201);
    const theirs = (await bob.get(`/api/trees/${second.body._id}/cards`)).body;
    expect(contents(theirs)).toEqual(contents(before));
    expect(theirs.map((c: any) => c._id).filter((id: string) => before.some((c: any) => c._id === id))).toEqual([]);
    expect((await alice.get(`/api/trees/${first.body._id}/cards`)).body).toEqual(before);
  });

  it("two imports of one file at once never share an id: one keeps the file's ids, the other gets new ones", async () => {
    const alice = await buildUser(server.url);
    const seed = file.replaceAll("gkwcard", "gkwrace");
    const [one, two] = await Promise.all([alice.post("/api/trees", { name: "One", seed }), alice.post("/api/trees", { name: "Two", seed })]);
    expect([one.status, two.status]).toEqual([201, 201]);
    const first = (await alice.get(`/api/trees/${one.body._id}/cards`)).body;
    const second = (await alice.get(`/api/trees/${two.body._id}/cards`)).body;
    expect(contents(first)).toEqual(contents(second));
    expect(first.filter((card: any) => second.some((other: any) => other._id === card._id))).toEqual([]);
    const kept = [...first, ...second].filter((card: any) => card._id.startsWith("gkwrace"));
    expect(kept).toHaveLength(3);
  });

  it("an id used twice in one file is kept for its first card only", async () => {
    const alice = await buildUser(server.url);
    const twice = "gkwtwice0000000000000001";
    const res = await alice.post("/api/trees", { name: "Twice", seed: `<gingko-card id="${twice}">\n\none\n\n</gingko-card>\n<gingko-card id="${twice}">\n\ntwo\n\n</gingko-card>` });
    const cards = (await alice.get(`/api/trees/${res.body._id}/cards`)).body;
    expect(cards.map((card: any) => [card.content, card._id === twice])).toEqual([
      ["one", true],
      ["two", false],
    ]);
  });

  it("a broken file is 400 with the line, and nothing is created", async () => {
    const alice = await buildUser(server.url);
    const trees = await treesOf(alice);
    const res = await alice.post("/api/trees", { name: "Broken", seed: '<gingko-card id="a">\n\nopen\n\n' });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/Gingko Writer file cannot be imported: a card is never closed \(line 5\)/);
    expect(await treesOf(alice)).toBe(trees);
  });
});

describe("exports: opml, gkw and leaves=1", () => {
  const SEED = "# One\n\nIntro.\n\n## One.a\n\nText\nin two lines.\n\nMore.\n\n# Two";

  it("serves .opml and .gkw files named after the tree, that read back as the same cards", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "Zoë's book", seed: SEED });
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    const opml = await alice.get(`/api/export/${tree._id}.opml`);
    expect(opml.status).toBe(200);
    expect(opml.headers.get("content-type")).toBe("text/x-opml; charset=utf-8");
    expect(opml.headers.get("content-disposition")).toContain(".opml");
    expect(opml.text).toContain('<outline text="# One" _note="&#10;Intro.">');
    expect(opml.text).toContain('<outline text="Text" _note="in two lines."/>');
    const gkw = await alice.get(`/api/export/${tree._id}.gkw`);
    expect(gkw.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    expect(gkw.text.startsWith(`<gingko-card id="${cards[0]._id}">\n\n# One\n\nIntro.\n\n`)).toBe(true);
    for (const file of [opml.text, gkw.text]) {
      const copy = await alice.post("/api/trees", { name: "Copy", seed: file });
      expect(shape((await alice.get(`/api/trees/${copy.body._id}/cards`)).body)).toEqual(shape(cards));
    }
  });

  it("leaves=1 keeps only cards without children, in tree order, in every format; with cardId and column too", async () => {
    const alice = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "Leaves", seed: SEED });
    const cards = (await alice.get(`/api/trees/${tree._id}/cards`)).body;
    expect(contents(cards)).toEqual(["# One\n\nIntro.", "## One.a", "Text\nin two lines.", "More.", "# Two"]);
    expect((await alice.get(`/api/export/${tree._id}.md?leaves=1`)).text).toBe("Text\nin two lines.\n\nMore.\n\n# Two");
    expect(JSON.parse((await alice.get(`/api/export/${tree._id}.json?leaves=true`)).text)).toEqual([{ content: "Text\nin two lines." }, { content: "More." }, { content: "# Two" }]);
    expect((await alice.get(`/api/export/${tree._id}.md?leaves=1&cardId=${cards[0]._id}`)).text).toBe("Text\nin two lines.\n\nMore.");
    expect((await alice.get(`/api/export/${tree._id}.md?leaves=1&column=1`)).text).toBe("# Two");
    expect((await alice.get(`/api/export/${tree._id}.md?leaves=0`)).text).toContain("## One.a");
    for (const format of ["txt", "html", "opml", "gkw", "docx", "impress"]) {
      const res = await alice.download(`/api/export/${tree._id}.${format}?leaves=1`);
      expect(res.status, format).toBe(200);
    }
    const opml = (await alice.get(`/api/export/${tree._id}.opml?leaves=1`)).text;
    expect(opml).not.toContain("One.a");
  });

  it("a bad leaves flag is 400; another user's private tree is 404 in the new formats", async () => {
    const alice = await buildUser(server.url);
    const bob = await buildUser(server.url);
    const tree = await buildTree(alice, { name: "Private", seed: SEED });
    const bad = await alice.get(`/api/export/${tree._id}.opml?leaves=yes`);
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ path: "leaves", message: "must be 1 or 0 (true or false)" }]);
    for (const format of ["opml", "gkw"]) expect((await bob.get(`/api/export/${tree._id}.${format}`)).status).toBe(404);
    expect((await new Api(server.url).get(`/api/export/${tree._id}.opml`)).status).toBe(401);
  });
});
