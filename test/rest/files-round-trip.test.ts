/**
 * SPEC §14's "round trips are exact", through the server on real documents: long public
 * Markdown files of different shapes (test/fixtures/documents) and OPML written in the shapes
 * Workflowy, Dynalist, OmniOutliner and Gingko Writer export (test/fixtures/outlines). Each is
 * imported as a tree, exported in md, json, opml and gkw, and each export imported again: the
 * cards (text, order, depth) must be the same. The unit property tests
 * (src/formats/round-trip.test.ts) do the same for random trees.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

const FIXTURES = path.resolve(import.meta.dirname, "../fixtures");

let server: InProcessServer;
let alice: Api;
beforeAll(async () => {
  server = await startInProcessServer();
  alice = await buildUser(server.url);
});
afterAll(() => server.stop());

/** The tree's cards as [content, depth], in tree order. */
async function cardsOf(treeId: string): Promise<[string, number][]> {
  const cards: { _id: string; parentId: string | null; content: string }[] = (await alice.get(`/api/trees/${treeId}/cards`)).body;
  const depths = new Map<string, number>();
  return cards.map((card) => {
    const depth = card.parentId ? depths.get(card.parentId)! + 1 : 1;
    depths.set(card._id, depth);
    return [card.content, depth];
  });
}

async function treeFrom(name: string, seed: string): Promise<string> {
  const res = await alice.post("/api/trees", { name, seed });
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201);
  return res.body._id;
}

async function expectRoundTrips(treeId: string, formats: readonly string[] = ["md", "json", "opml", "gkw"]): Promise<void> {
  const original = await cardsOf(treeId);
  for (const format of formats) {
    const exported = await alice.get(`/api/export/${treeId}.${format}`);
    expect(exported.status).toBe(200);
    const copy = await treeFrom(`${format} copy`, exported.text);
    expect(await cardsOf(copy), `through ${format}`).toEqual(original);
  }
}

describe("round trips of long public Markdown documents", () => {
  for (const file of ["express-history.md", "awesome-readme.md", "marked-using-pro.md"]) {
    it(`${file}: tree → md, json, opml, gkw → tree gives the same cards`, async () => {
      const text = await readFile(path.join(FIXTURES, "documents", file), "utf8");
      const treeId = await treeFrom(file, text);
      const cards = await cardsOf(treeId);
      expect(cards.length).toBeGreaterThan(20);
      await expectRoundTrips(treeId);
    });
  }
});

describe("OPML in other outliners' shapes", () => {
  const expected: Record<string, [string, number][]> = {
    "workflowy.opml": [
      ["Trip to Lisbon\nBooked in March", 1],
      ["<b>Flights</b> out &amp; back", 2],
      ["Day one", 2],
      ["Tram 28 to the castle\nBuy tickets at the kiosk\nnot on board", 3],
      ["Dinner in <i>Alfama</i>", 3],
      ["Day two", 2],
      ["Belém \u2014 pastries", 3],
      ["Packing", 1],
    ],
    "dynalist.opml": [
      ["## Chapter 1: **Background**\nSurvey the field\n\n- three schools\n- one open question", 1],
      ["Read [the 1998 paper](https://example.com/1998)", 2],
      ["Notes with `code` and $x^2$", 2],
      ["## Chapter 2", 1],
      ["Draft", 2],
      ["Outline the argument", 3],
    ],
    "omnioutliner.opml": [
      ["Before", 1],
      ["Freeze the branch", 2],
      ["Write notes\nfor the blog\nKeep it short\nlink the changelog", 2],
      ["On the day", 1],
      ["Tag &amp; publish", 2],
      ["Caf&eacute; for the team&nbsp;\u2615", 2],
    ],
    "gingko-writer.opml": [
      ['# Part one\n\nIt was a "dark" night & the wind <howled>.\n\n- a list\n- of things', 1],
      ["## Chapter 1\n\n```\ncode\n  indented\n```", 2],
      ["# Part two", 1],
    ],
  };
  for (const [file, cards] of Object.entries(expected)) {
    it(`${file} imports cleanly, and round-trips exactly`, async () => {
      const treeId = await treeFrom(file, await readFile(path.join(FIXTURES, "outlines", file), "utf8"));
      expect(await cardsOf(treeId)).toEqual(cards);
      await expectRoundTrips(treeId, ["json", "opml", "gkw"]);
    });
  }
});
