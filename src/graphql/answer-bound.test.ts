/**
 * The answer bound (answer-bound.ts) on the real schema: which operations it lets through
 * and which it refuses, before anything runs. What the server then really sends, against
 * the tree's JSON, is measured over HTTP in test/graphql/amplification.test.ts.
 */
import { getOperationAST, Kind, parse, type FragmentDefinitionNode } from "graphql";
import { describe, expect, it } from "vitest";
import { boundAnswer } from "./answer-bound.js";
import { schema } from "./schema.js";

const T = "a".repeat(24);
const U = "b".repeat(24);

function check(query: string, variables: Record<string, unknown> = {}, limit = 4): void {
  const document = parse(query);
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  boundAnswer(schema, getOperationAST(document)!, fragments, variables, limit);
}

const ALL = "id treeId parentId content position createdAt updatedAt version depth __typename";

describe("honest queries pass", () => {
  it.each([
    ["the flat list", `{ tree(id: "${T}") { name revision cards { ${ALL} } } }`],
    ["roots with children eight levels down", `{ tree(id: "${T}") { roots { ${"id content depth children { ".repeat(8)}id${" }".repeat(8)} } } }`],
    ["GraphiQL's example", `query W($id: ID!) { tree(id: $id) { name roots { ...F children { ...F children { ...F } } } } } fragment F on Card { id depth content }`],
    ["each card with its parent's id", `{ tree(id: "${T}") { cards { id content parent { id parentId depth } } } }`],
    ["a card's siblings", `{ card(id: "${T}") { content parent { content children { id content } } } }`],
    ["a card's tree and versions", `{ card(id: "${T}") { content versions { content } tree { name cards { id } } } }`],
    ["three lists of every field (3.7 times each card's REST JSON at worst)", `{ tree(id: "${T}") { a: cards { ${ALL} } b: cards { ${ALL} } c: cards { ${ALL} } } }`],
    ["thirty trees by id", `{ ${Array.from({ length: 30 }, (_, i) => `t${i}: tree(id: "${String(i).padStart(24, "x")}") { name cards { id content } }`).join(" ")} }`],
    ["every tree with its cards", `{ trees { id name users cards { id content } history { revision } } }`],
    ["the flat list and the export", `{ tree(id: "${T}") { cards { id content } export(format: MD) { body } } }`],
    ["one HTML export", `{ tree(id: "${T}") { name export(format: HTML) { body } } }`],
    ["twenty card mutations", `mutation { ${Array.from({ length: 20 }, (_, i) => `c${i}: createCard(input: { treeId: "${T}", position: ${i} }) { id content depth }`).join(" ")} }`],
    ["a subscription", `subscription { treeChanged(treeId: "${T}") { revision cards { id content depth children { id } } tree { name } } }`],
    ["introspection once", `{ __schema { types { name } } }`],
  ])("%s", (_name, query) => {
    expect(() => check(query)).not.toThrow();
  });
});

describe("amplification is refused", () => {
  it.each([
    ["children → parent → children (the issue's probe)", `{ publicTree(url: "probe") { cards { children { parent { children { parent { children { id content } } } } } } } }`],
    ["parent's content from a list", `{ tree(id: "${T}") { cards { parent { content } } } }`],
    ["parent's versions from a list", `{ tree(id: "${T}") { roots { children { parent { versions { content } } } } } }`],
    ["the tree again under each card", `{ tree(id: "${T}") { cards { tree { cards { id } } } } }`],
    ["the tree's name under each card", `{ tree(id: "${T}") { cards { tree { name } } } }`],
    ["a trashed card's parent's children", `{ tree(id: "${T}") { trash { card { parent { children { id } } } } } }`],
  ])("%s", (_name, query) => {
    expect(() => check(query)).toThrow(/reads the same cards again|repeats the tree/);
  });

  it.each([
    ["five aliases of content", `{ tree(id: "${T}") { cards { a: content b: content c: content d: content e: content } } }`],
    ["four lists of every field", `{ tree(id: "${T}") { a: cards { ${ALL} } b: cards { ${ALL} } c: cards { ${ALL} } d: cards { ${ALL} } } }`],
    ["the same tree by id five times", `{ ${[1, 2, 3, 4, 5].map((i) => `t${i}: tree(id: "${T}") { cards { content } }`).join(" ")} }`],
    ["the same tree by a variable and by name", `query ($t: ID!) { a: tree(id: $t) { cards { content } } b: tree(id: "${T}") { cards { content } } c: tree(id: "${T}") { cards { content } } d: trees { cards { content } } e: publicTree(url: "x") { cards { content } } }`],
    ["children nested five times under the flat list", `{ tree(id: "${T}") { cards { ${"content children { ".repeat(4)}content${" }".repeat(4)} } } }`],
    ["a long alias on every card", `{ tree(id: "${T}") { cards { ${"k".repeat(900)}: id } } }`],
    ["the tree's name many times", `{ tree(id: "${T}") { ${Array.from({ length: 5 }, (_, i) => `n${i}: name`).join(" ")} } }`],
    ["five histories", `{ tree(id: "${T}") { ${Array.from({ length: 5 }, (_, i) => `h${i}: history { revision }`).join(" ")} } }`],
    ["introspection five times", `{ ${Array.from({ length: 5 }, (_, i) => `s${i}: __schema { types { name } }`).join(" ")} }`],
    ["two HTML exports", `{ tree(id: "${T}") { a: export(format: HTML) { body } b: export(format: HTML) { body } } }`],
    ["an HTML export beside the cards' text", `{ tree(id: "${T}") { export(format: HTML) { body } cards { content } } }`],
  ])("%s", (_name, query) => {
    expect(() => check(query, { t: T })).toThrow(/at most 4 are allowed/);
  });

  it("different trees by id are not added up, but a variable naming the same tree is", () => {
    const four = (b: string) => `query ($t: ID!) { a: tree(id: $t) { cards { content } } b: tree(id: "${b}") { cards { content } } c: tree(id: "${b}") { cards { content } } d: tree(id: "${b}") { cards { content } } e: tree(id: "${b}") { cards { content } } }`;
    expect(() => check(four(U), { t: T })).not.toThrow();
    expect(() => check(four(U), { t: U })).toThrow(/up to 5 times over/);
  });

  it("the limit is the configured one", () => {
    const two = `{ tree(id: "${T}") { cards { a: content b: content } } }`;
    expect(() => check(two, {}, 2)).not.toThrow();
    expect(() => check(two, {}, 1)).toThrow(/at most 1 are allowed/);
  });
});

it("every field of Card and Tree has a rule", () => {
  const card = Object.keys((schema.getType("Card") as any).getFields()).join(" ").replace("children", "children { id }").replace("parent ", "parent { id } ").replace("tree ", "tree { id } ").replace("versions", "versions { version }");
  expect(() => check(`{ card(id: "${T}") { ${card} } }`)).not.toThrow();
  const fields = Object.entries((schema.getType("Tree") as any).getFields())
    .map(([name, field]: [string, any]) => (name === "export" ? "export(format: MD) { body }" : /Card|Collaborator|Change|TrashEntry/.test(String(field.type)) ? `${name} { __typename }` : name))
    .join(" ");
  expect(() => check(`{ tree(id: "${T}") { ${fields} } }`)).not.toThrow();
});
