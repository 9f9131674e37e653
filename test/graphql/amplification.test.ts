/**
 * Amplification (issue 25): no query of at most 1 KB, anonymous or signed in, makes the
 * server send more than 4 times the JSON of the tree it reads (the tree record and its cards
 * as REST sends them). Queries that would re-read the same cards through `parent` or `tree`
 * under a list, or ask for the same data more than 4 times, are refused before they run
 * (src/graphql/answer-bound.ts); everything else is answered, and its size is measured
 * against the tree's JSON.
 *
 * Then the result budget (src/graphql/result-budget.ts), charged at one point whichever way
 * a list is written: the same over-budget query sent twice is refused twice, by both paths
 * (lists written as bytes from the read model, and ordinary execution, which a directive
 * in the selection forces), and again after an edit in place (the patched lists).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
let owner: Api & { user: any };

interface Answer {
  status: number;
  bytes: number;
  body: { data?: any; errors?: { message: string; extensions: { code: string } }[] };
}

async function graphql(query: string, as: Api | null): Promise<Answer> {
  const res = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/graphql-response+json, application/json",
      ...(as?.authHeader ? { authorization: as.authHeader } : {}),
    },
    body: JSON.stringify({ query }),
    signal: AbortSignal.timeout(30_000),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, bytes: bytes.length, body: JSON.parse(bytes.toString("utf8")) };
}

interface Probed {
  id: string;
  url: string;
  root: string;
  /** Bytes of the tree record and of its cards, as REST sends them. */
  json: number;
}

async function publicTree(name: string, url: string, seed: unknown): Promise<Probed> {
  const tree = await buildTree(owner, { name, seed: JSON.stringify(seed) });
  expect((await owner.put(`/api/trees/${tree._id}`, { publicUrl: url })).status).toBe(200);
  const record = await owner.get(`/api/trees/${tree._id}`);
  const cards = await owner.get(`/api/trees/${tree._id}/cards`);
  return { id: tree._id, url, root: cards.body[0]._id, json: Buffer.byteLength(record.text) + Buffer.byteLength(cards.text) };
}

const fan = (root: string, children: number, child: (i: number) => string) => [{ content: root, children: Array.from({ length: children }, (_, i) => ({ content: child(i) })) }];

let small: Probed;
let heavy: Probed;

beforeAll(async () => {
  server = await startTestServer({
    env: {
      GRAPHQL_VALUE_LIMIT: "1000",
      GRAPHQL_ANONYMOUS_VALUE_LIMIT: "1000",
      GRAPHQL_TEXT_LIMIT: "20000",
      // The probes come back to back from one address, on a loaded machine: the time budget
      // and the allowance are tested elsewhere (test/reliability/graphql-limits.test.ts).
      GRAPHQL_ANONYMOUS_TIME_LIMIT_MS: "10000",
      GRAPHQL_ANONYMOUS_TIME_PER_SECOND_MS: "100000",
    },
  });
  owner = await buildUser(server.url, "owner");
  // The issue's tree: one card with 20 children.
  small = await publicTree("Small", "amp-small", fan("# Root", 20, (i) => `Child ${i}`));
  // A root whose text is what JSON escapes most, under which small children sit: where
  // repeating the root's text would weigh most against the tree.
  heavy = await publicTree("Heavy", "amp-heavy", fan('"\\\n🌳é<'.repeat(400), 20, () => "x"));
}, 60_000);
afterAll(() => server.stop());

const ALL = "id treeId parentId content position createdAt updatedAt version depth __typename";

/** Queries an attacker would try, as a function of how the tree is named (`tree(id:)` or `publicTree(url:)`). */
function hostileQueries(tree: string, root: string): Record<string, string> {
  const aliases = (n: number, field: string) => Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(" ");
  return {
    "the issue's probe: children, parent, children": `{${tree}{cards{children{parent{children{parent{children{id content position depth createdAt updatedAt}}}}}}}}`,
    "each card's parent's text": `{${tree}{cards{id parent{content}}}}`,
    "thirty aliases of the parent's id": `{${tree}{cards{${aliases(30, "parent{id}")}}}}`,
    "five aliases of content": `{${tree}{cards{${aliases(5, "content")}}}}`,
    "children nested under the flat list, text at each level": `{${tree}{cards{${"content children{".repeat(5)}content${"}".repeat(5)}}}}`,
    "a 900-character alias on each card": `{${tree}{cards{${"k".repeat(900)}:id}}}`,
    "four lists of every field": `{${tree}{${aliases(4, `cards{${ALL}}`)}}}`,
    "three lists of every field": `{${tree}{${aliases(3, `cards{${ALL}}`)}}}`,
    "the tree five times": Array.from({ length: 5 }, (_, i) => `t${i}:${tree}{cards{content}}`).join(" ").replace(/^/, "{") + "}",
    "the tree four times": Array.from({ length: 4 }, (_, i) => `t${i}:${tree}{cards{id content}}`).join(" ").replace(/^/, "{") + "}",
    "the root card by id, five times": `{${Array.from({ length: 5 }, (_, i) => `c${i}:card(id:"${root}"){content}`).join(" ")}}`,
    "the root card by id, with its children, four times": `{${Array.from({ length: 4 }, (_, i) => `c${i}:card(id:"${root}"){content children{content}}`).join(" ")}}`,
    "the tree's name under each card": `{${tree}{cards{tree{name}}}}`,
    "the tree under each card, with its cards": `{${tree}{cards{tree{cards{id}}}}}`,
    "two JSON exports": `{${tree}{a:export(format:JSON){body} b:export(format:JSON){body}}}`,
    "two HTML exports": `{${tree}{a:export(format:HTML){body} b:export(format:HTML){body}}}`,
    "one HTML export": `{${tree}{name export(format:HTML){body}}}`,
    "an HTML export beside the flat list": `{${tree}{export(format:HTML){body} cards{id content}}}`,
    "an export beside three aliases of content": `{${tree}{export(format:JSON){body} cards{${aliases(3, "content")}}}}`,
    "roots and children eight levels down, every field": `{${tree}{roots{${`${ALL} children{`.repeat(7)}${ALL}${"}".repeat(7)}}}}`,
    "the flat list with children and each parent's id": `{${tree}{cards{${ALL} children{id content} parent{id depth}}}}`,
    "the name and users, four times": `{${tree}{${aliases(4, "name")} u:users}}`,
  };
}

describe.each([
  ["the 21-card tree", () => small],
  ["the tree with a heavy root", () => heavy],
])("on %s, no query of at most 1 KB answers more than 4 times the tree's JSON", (_name, probed) => {
  it.each([
    ["anonymous", false],
    ["signed in", true],
  ])("%s", async (_who, signedIn) => {
    const tree = probed();
    const named = signedIn ? `tree(id:"${tree.id}")` : `publicTree(url:"${tree.url}")`;
    const answered: string[] = [];
    for (const [name, query] of Object.entries(hostileQueries(named, tree.root))) {
      expect(Buffer.byteLength(query), name).toBeLessThanOrEqual(1024);
      const answer = await graphql(query, signedIn ? owner : null);
      expect(answer.bytes, `${name}: ${answer.bytes} bytes against the tree's ${tree.json}`).toBeLessThanOrEqual(4 * tree.json);
      if (answer.body.errors) {
        expect(answer.status, `${name}: ${answer.body.errors[0]!.message}`).toBe(400);
        expect(answer.body.errors[0]!.extensions.code, name).toBe("invalid_request");
        expect(answer.body.data, name).toBeUndefined();
      } else {
        answered.push(name);
      }
    }
    // What is honest is still answered, in full.
    expect(answered).toEqual([
      "three lists of every field",
      "the tree four times",
      "two JSON exports",
      "one HTML export",
      "roots and children eight levels down, every field",
      "the flat list with children and each parent's id",
      "the name and users, four times",
    ]);
  }, 60_000);
});

/** A small seeded generator (mulberry32), so a failing query can be found again. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random query of at most 1 KB over cards and trees: aliases, lists, `parent` and `tree` steps, exports. */
function randomQuery(next: () => number, tree: string, root: string): string {
  const pick = <T,>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const alias = () => (next() < 0.3 ? `${pick(["a", "b", "c", "k"]).repeat(1 + Math.floor(next() * 40))}${Math.floor(next() * 1000)}:` : "");
  const card = (depth: number): string => {
    const fields: string[] = [];
    for (let n = 1 + Math.floor(next() * 4); n > 0; n--) {
      const field = pick(["id", "treeId", "parentId", "content", "position", "createdAt", "updatedAt", "version", "depth", "__typename", "children", "parent", "tree", "content"]);
      if (field === "children" || field === "parent") fields.push(depth > 0 ? `${alias()}${field}{${card(depth - 1)}}` : "id");
      else if (field === "tree") fields.push(depth > 0 ? `${alias()}tree{${treeFields(depth - 1)}}` : "id");
      else fields.push(`${alias()}${field}`);
    }
    return fields.join(" ");
  };
  const treeFields = (depth: number): string => {
    const fields: string[] = [];
    for (let n = 1 + Math.floor(next() * 3); n > 0; n--) {
      const field = pick(["id", "name", "users", "revision", "publicUrl", "cards", "roots", "cards", "export"]);
      if (field === "cards" || field === "roots") fields.push(depth > 0 ? `${alias()}${field}{${card(depth - 1)}}` : "id");
      else if (field === "export") fields.push(`${alias()}export(format:${pick(["TXT", "MD", "JSON", "HTML"])}){body}`);
      else fields.push(`${alias()}${field}`);
    }
    return fields.join(" ");
  };
  const roots: string[] = [];
  for (let n = 1 + Math.floor(next() * 3); n > 0; n--) {
    roots.push(next() < 0.75 ? `${alias()}${tree}{${treeFields(4)}}` : `${alias()}card(id:"${root}"){${card(4)}}`);
  }
  return `{${roots.join(" ")}}`;
}

describe("random queries of at most 1 KB", () => {
  it.each([
    ["the 21-card tree, anonymous", () => small, false],
    ["the 21-card tree, signed in", () => small, true],
    ["the tree with a heavy root, anonymous", () => heavy, false],
    ["the tree with a heavy root, signed in", () => heavy, true],
  ])("on %s, each answers at most 4 times the tree's JSON, or is refused", async (_name, probed, signedIn) => {
    const tree = probed();
    const named = signedIn ? `tree(id:"${tree.id}")` : `publicTree(url:"${tree.url}")`;
    const next = random(25 + (signedIn ? 1 : 0) + (tree === heavy ? 2 : 0));
    let answered = 0;
    let sent = 0;
    while (sent < 60) {
      const query = randomQuery(next, named, tree.root);
      if (Buffer.byteLength(query) > 1024) continue;
      sent++;
      const answer = await graphql(query, signedIn ? owner : null);
      expect(answer.bytes, `${query}: ${answer.bytes} bytes against the tree's ${tree.json}`).toBeLessThanOrEqual(4 * tree.json);
      const code = answer.body.errors?.[0]?.extensions.code;
      if (code === undefined) {
        answered++;
      } else {
        // Refused before running, or stopped by the result budget (this server's is small); nothing else.
        expect([400, 200], query).toContain(answer.status);
        expect(["invalid_request", "payload_too_large"], `${query}: ${answer.body.errors![0]!.message}`).toContain(code);
      }
    }
    // Not a test of refusals alone: a fair share of them is answered.
    expect(answered).toBeGreaterThan(6);
  }, 120_000);
});

describe("refusals say why", () => {
  it("the issue's probe is refused before it runs, naming the way round", async () => {
    const probe = `{publicTree(url:"amp-small"){cards{children{parent{children{parent{children{id content position depth createdAt updatedAt treeId}}}}}}}}`;
    expect(probe.length).toBeLessThanOrEqual(150);
    for (const as of [null, owner]) {
      const answer = await graphql(probe, as);
      expect(answer.status).toBe(400);
      expect(answer.body.errors).toHaveLength(1);
      expect(answer.body.errors![0]!.message).toMatch(/`children` under `parent` inside a list reads the same cards again .* flat `cards` list/);
    }
  });

  it("a query asking for the same cards too many times is told the limit", async () => {
    const answer = await graphql(`{publicTree(url:"amp-small"){cards{a:content b:content c:content d:content e:content}}}`, null);
    expect(answer.body.errors![0]!.message).toMatch(/could answer each card up to 5 times over; at most 4 are allowed/);
  });

  it("the siblings of one card are not re-entry", async () => {
    const cards = (await owner.get(`/api/trees/${small.id}/cards`)).body;
    const answer = await graphql(`{card(id:"${cards[3]._id}"){parent{content children{id}}}}`, owner);
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.data.card.parent.children).toHaveLength(20);
  });
});

describe("the result budget, charged at one point", () => {
  let sixty: Probed;
  let texts: Probed;
  beforeAll(async () => {
    sixty = await publicTree("Sixty", "budget-sixty", Array.from({ length: 60 }, (_, i) => ({ content: `c${i}` })));
    texts = await publicTree("Texts", "budget-texts", Array.from({ length: 20 }, (_, i) => ({ content: `${i}`.padEnd(600, ".") })));
  });

  // Three lists of 60 cards × 8 fields: 1,440 values, over the 1,000 this server allows.
  const FIELDS = "id treeId parentId content position createdAt updatedAt version";
  const overValues = (tree: string, extra = "") => `{${tree}{a:cards{${FIELDS}${extra}} b:cards{${FIELDS}${extra}} c:cards{${FIELDS}${extra}}}}`;
  // Two lists of 20 cards of 600 characters: 24,000 characters, over the 20,000 allowed.
  const overText = (tree: string, extra = "") => `{${tree}{a:cards{id content${extra}} b:cards{id content${extra}}}}`;

  // The directive (on the last field, so the widths stay the same) sends the lists through graphql-js.
  async function expectSpent(query: string, as: Api | null, message: RegExp): Promise<void> {
    const answer = await graphql(query, as);
    expect(answer.status).toBe(200);
    expect(answer.body.data).toBeNull();
    expect(answer.body.errors).toHaveLength(1);
    expect(answer.body.errors![0]).toMatchObject({ extensions: { code: "payload_too_large" } });
    expect(answer.body.errors![0]!.message).toMatch(message);
  }

  it.each([
    ["values, lists written from the read model", overValues, "", /resolves more than 1000 values/],
    ["values, ordinary execution", overValues, " @include(if: true)", /resolves more than 1000 values/],
    ["text, lists written from the read model", overText, "", /more than 20000 characters of card text/],
    ["text, ordinary execution", overText, " @include(if: true)", /more than 20000 characters of card text/],
  ])("%s: the same query sent twice is refused twice, and again after an edit", async (_name, over, extra, message) => {
    const tree = over === overValues ? sixty : texts;
    for (const [as, named] of [
      [owner, `tree(id:"${tree.id}")`],
      [null, `publicTree(url:"${tree.url}")`],
    ] as const) {
      const query = over(named, extra);
      // Written from the read model, the lists before the one over the limit are kept, and the
      // second send patches them from there (same revision, nothing to swap): charged the same.
      await expectSpent(query, as, message);
      await expectSpent(query, as, message);
      // Without its last list (values) or its second (text) the query fits, and is answered.
      const fewer = query.replace(/ c:cards\{[^}]*\}/, "").replace(/ b:cards\{[^}]*\}/, over === overText ? "" : "$&");
      const fits = await graphql(fewer, as);
      expect(fits.body.errors, fewer).toBeUndefined();
      // An edit in place: the kept lists are patched (the edited card's fields swapped).
      const cards = (await owner.get(`/api/trees/${tree.id}/cards`)).body;
      expect((await owner.put(`/api/trees/${tree.id}/cards/${cards[1]._id}`, { content: cards[1].content.replace(/^./, "e") })).status).toBe(200);
      expect((await graphql(fewer, as)).body.errors).toBeUndefined();
      await expectSpent(query, as, message);
      await expectSpent(query, as, message);
    }
  }, 60_000);
});
