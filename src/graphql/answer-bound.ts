/**
 * How big an answer can be next to what it was read from, decided before anything runs
 * (issue 25). A ~150-byte query walking `children` → `parent` → `children` on a 21-card
 * tree answered 7.4 MB: every `parent` taken from a list reaches the same card once per
 * sibling, and every list under it multiplies again. The values budget stops such a query
 * only after it has built most of its answer; this bounds the answer by the tree itself.
 *
 * The walk goes over the operation's selections (fields merged by response key as graphql-js
 * merges them, directives ignored: counting more, never less), with the variables, and finds
 * every place a card or a tree can appear in the answer. Two rules:
 *
 * 1. **No re-entry.** From a list of cards, `parent` and `tree` reach cards and trees that
 *    the list reaches again for each of their children. Under such a step only fields of a
 *    bounded size may be asked (ids, dates, numbers, further `parent`/`tree` steps): a list,
 *    a card's `content`, a tree's `name`, `users`, `publicUrl`, its history or export there
 *    is refused, whatever the tree. (From a single card, `card(id) { parent { children } }`,
 *    the siblings of one card, is fine.) This is what took the probe from 7.4 MB to nothing.
 * 2. **At most `copies` copies of anything.** Each card can then appear only a number of times
 *    fixed by the query (aliases, `cards` beside `roots`, `children` nested under `cards`),
 *    never by the tree. The walk counts, for one card (and one tree record), how many times
 *    each field of its REST representation is written and how many bytes of keys, braces and
 *    GraphQL-only fields come with it, and from that the most the answer can weigh against
 *    the card's REST JSON, whatever the card holds (`ratio`: the extreme over each field's
 *    possible sizes). Over `copies` (4 by default, GRAPHQL_COPY_LIMIT) the operation is
 *    refused. So the whole answer is at most `copies` × the JSON of the trees it reads, plus
 *    the answer's envelope. A tree's history, trash, versions, collaborators, exports and the
 *    schema are not part of that JSON: each may be asked for at most `copies` times.
 *
 * Places that may hold the same record are added up; places that cannot are not:
 * - the cards under `roots` stand at a known depth, so `roots { children { children } }`
 *   reaches each card once, at its own depth, while `cards { children }` reaches a card
 *   both in the list and under its parent;
 * - trees named by different ids (`tree(id:)`, `updateTree(id:)`...), or different public
 *   addresses, are different trees; a tree named by id and one named by address may be
 *   the same, and so may anything reached without a name (`trees`, `Card.tree`);
 * - a card named by id (`card(id:)`, `updateCard(id:)`) is one card; the cards reached from
 *   it may be any.
 *
 * Refusals are `invalid_request` (400), like the cost limit: the query itself asks for the
 * same thing too many times, whatever the tree holds.
 */
import {
  getArgumentValues,
  getNamedType,
  isListType,
  isNonNullType,
  isObjectType,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from "graphql";
import { ValidationError } from "../shared/errors.js";
import { collectFields } from "./selections.js";

/** JSON bytes a REST field's value can take: [fewest, most]. */
type Range = readonly [number, number];

/** A card's fields as REST writes them (presentCard), by their GraphQL name, with their sizes. */
const CARD_VALUES: Record<string, Range> = {
  id: [26, 26],
  treeId: [26, 26],
  parentId: [4, 26],
  content: [2, Infinity],
  position: [1, 24],
  createdAt: [26, 26],
  updatedAt: [26, 26],
  version: [1, 11],
};
/** REST's keys, braces and commas around one card in a list: `{"_id":…,"treeId":…,…,"__v":…},`. */
const CARD_FRAME = restFrame(["_id", "treeId", "parentId", "content", "position", "createdAt", "updatedAt", "__v"]);

/** A tree record as REST writes it (presentTree), by GraphQL name. */
const TREE_VALUES: Record<string, Range> = {
  version: [1, 11],
  revision: [1, 11],
  id: [26, 26],
  createdAt: [26, 26],
  updatedAt: [26, 26],
  // 1 to 200 characters; up to 6 bytes each once escaped.
  name: [3, 1202],
  owner: [26, 26],
  users: [28, Infinity],
};
const TREE_FRAME = restFrame(["__v", "revision", "_id", "createdAt", "updatedAt", "name", "owner", "users"]);

/** Most bytes of the fields that have no REST value of their own (always counted whole). */
const CARD_EXTRAS: Record<string, number> = { depth: 11, __typename: 6 };
const TREE_EXTRAS: Record<string, number> = { latex: 5, publicUrl: 66, __typename: 6 };

/**
 * What one export adds per card, in copies of its text and bytes around it (headings,
 * separators, JSON keys and escapes, HTML tags): generous next to what the exporters write
 * (test/graphql/amplification.test.ts measures real exports against the tree's JSON).
 * HTML counts as four copies, so it comes alone: text of nothing but `&` renders to 5 times
 * its JSON, which no weight below the limit could cover (docs/decisions.md).
 */
const EXPORT_WEIGHT: Record<string, { content: number; bytes: number }> = {
  TXT: { content: 1, bytes: 8 },
  MD: { content: 1, bytes: 8 },
  JSON: { content: 2, bytes: 64 },
  // Each `&` of the text is `&amp;` there, each `<` `&lt;`: up to 5 times the text's JSON.
  HTML: { content: 4, bytes: 96 },
};

/** Things that are not the tree's JSON; each may be asked for `copies` times. */
const COUNTED = ["versions", "history", "trash", "collaborators", "export", "schema"] as const;

function restFrame(keys: string[]): number {
  // Each `"key":`, a comma between fields, the braces, and the comma between records.
  return keys.reduce((sum, key) => sum + JSON.stringify(key).length + 1, 0) + (keys.length - 1) + 2 + 1;
}

/** Bytes of `"key":` and the comma after it. */
const keyBytes = (key: string) => JSON.stringify(key).length + 2;

/** Copies of each REST field of one record, extra bytes beside them, and the counted things. */
class Tally {
  readonly n = new Map<string, number>();

  add(what: string, amount: number): void {
    this.n.set(what, (this.n.get(what) ?? 0) + amount);
  }

  get(what: string): number {
    return this.n.get(what) ?? 0;
  }

  plus(other: Tally | undefined): Tally {
    const sum = new Tally();
    for (const tally of [this, other]) for (const [what, amount] of tally?.n ?? []) sum.add(what, amount);
    return sum;
  }

  /** Each figure the larger of the two. */
  atLeast(other: Tally): void {
    for (const [what, amount] of other.n) this.n.set(what, Math.max(this.get(what), amount));
  }
}

/**
 * The places of one record or one tree: cards at no known depth, cards at each known depth
 * (under `roots`), and the tree record's own fields.
 */
class Scope {
  readonly anywhere = new Tally();
  readonly atDepth = new Map<number, Tally>();
  readonly tree = new Tally();

  depth(depth: number): Tally {
    let tally = this.atDepth.get(depth);
    if (!tally) this.atDepth.set(depth, (tally = new Tally()));
    return tally;
  }

  /** Each figure at its most for any one card of the scope. */
  worstCard(): Tally {
    const worst = this.anywhere.plus(undefined);
    for (const tally of this.atDepth.values()) worst.atLeast(this.anywhere.plus(tally));
    return worst;
  }
}

/** Where a card or tree in the answer comes from: scopes that name different records are kept apart. */
type Family = "treeId" | "treeUrl" | "cardId" | "new" | "any";

interface CardPlace {
  scope: Scope;
  /** Where this place's fields are counted. */
  tally: Tally;
  depth: number | null;
  /** Several cards here (a list), so `parent` and `tree` re-enter. */
  listed: boolean;
  /** Reached by re-entry: every field counts whole, at its most, and nothing unbounded is allowed. */
  reentered: boolean;
  /** Where the cards and trees reached from here are counted. */
  onward: Scope;
}

interface TreePlace {
  scope: Scope;
  tally: Tally;
  reentered: boolean;
}

/** Root fields whose records are named by an argument. */
const NAMED: Record<string, { family: Family; arg?: string }> = {
  "Query.tree": { family: "treeId", arg: "id" },
  "Query.publicTree": { family: "treeUrl", arg: "url" },
  "Query.card": { family: "cardId", arg: "id" },
  "Mutation.updateTree": { family: "treeId", arg: "id" },
  "Mutation.restoreTree": { family: "treeId", arg: "id" },
  "Mutation.restoreCard": { family: "treeId", arg: "treeId" },
  "Mutation.revertChange": { family: "treeId", arg: "treeId" },
  "Mutation.updateCard": { family: "cardId", arg: "id" },
  "Mutation.createCard": { family: "new" },
  "Mutation.importSeed": { family: "new" },
  "Mutation.createTree": { family: "new" },
  "Mutation.cloneTree": { family: "new" },
  "Mutation.clonePublicTree": { family: "new" },
  "Subscription.treeChanged": { family: "treeId", arg: "treeId" },
};

/** Why an operation is refused; caught by `boundAnswer`. */
function refuse(message: string): never {
  throw new ValidationError(message);
}

const REENTRY =
  "reads the same cards again for each card of the list above it (each level multiplies the answer by the number of siblings). " +
  "Ask for `parentId` (or `parent { id }`) and take the rest from the flat `cards` list, which holds every card once.";

class Walk {
  private readonly scopes = new Map<Family, Map<string, Scope>>();
  private fresh = 0;

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragments: Map<string, FragmentDefinitionNode>,
    private readonly variables: Record<string, unknown>,
  ) {}

  scope(family: Family, key = ""): Scope {
    let byKey = this.scopes.get(family);
    if (!byKey) this.scopes.set(family, (byKey = new Map()));
    let scope = byKey.get(key);
    if (!scope) byKey.set(key, (scope = new Scope()));
    return scope;
  }

  /** Each figure at its most for one card, and for one tree, over every way a record can be reached. */
  worst(): { card: Tally; tree: Tally } {
    const card = new Tally();
    const tree = new Tally();
    for (const byKey of this.scopes.values()) {
      const familyCard = new Tally();
      const familyTree = new Tally();
      for (const scope of byKey.values()) {
        familyCard.atLeast(scope.worstCard());
        familyTree.atLeast(scope.tree);
      }
      for (const [what, amount] of familyCard.n) card.add(what, amount);
      for (const [what, amount] of familyTree.n) tree.add(what, amount);
    }
    return { card, tree };
  }

  operation(operation: OperationDefinitionNode): void {
    const root = operation.operation === "query" ? this.schema.getQueryType() : operation.operation === "mutation" ? this.schema.getMutationType() : this.schema.getSubscriptionType();
    if (!root) return;
    for (const nodes of this.collect([operation.selectionSet]).values()) {
      const name = nodes[0]!.name.value;
      if (name === "__schema" || name === "__type") {
        this.scope("any").tree.add("schema", 1);
        continue;
      }
      const field = root.getFields()[name];
      if (!field) continue;
      const named = NAMED[`${root.name}.${name}`];
      const key = named?.arg === undefined ? null : this.argument(field, nodes[0]!, named.arg);
      let scope: Scope;
      if (named?.family === "new") scope = this.scope("new", String(this.fresh++));
      else if (named && key !== null) scope = this.scope(named.family, key);
      else scope = this.scope("any");
      // Cards reached from a card named by id may be any cards; from a named tree, that tree's.
      const onward = named?.family === "cardId" || named?.family === "new" ? this.scope("any") : scope;
      this.enter(field.type, nodes, scope, onward, false);
    }
  }

  /** The argument's value, or null when it has none (a bad value: it then counts with everything else). */
  private argument(field: GraphQLField<unknown, unknown>, node: FieldNode, arg: string): string | null {
    try {
      const value = getArgumentValues(field, node, this.variables)[arg];
      return typeof value === "string" ? value : null;
    } catch {
      return null;
    }
  }

  private collect(sets: readonly SelectionSetNode[]): Map<string, FieldNode[]> {
    return collectFields(sets, this.fragments);
  }

  private subselections(nodes: readonly FieldNode[]): SelectionSetNode[] {
    return nodes.flatMap((node) => (node.selectionSet ? [node.selectionSet] : []));
  }

  /**
   * A field of type `type` answered in `scope`, below a list or not. Cards and trees get a
   * place of their own; other objects are walked for the cards and trees beneath them.
   */
  private enter(type: GraphQLOutputType, nodes: FieldNode[], scope: Scope, onward: Scope, belowList: boolean): void {
    const named = getNamedType(type);
    const listed = belowList || isListType(isNonNullType(type) ? type.ofType : type);
    if (named.name === "Card") {
      scope.anywhere.add("extra", 3);
      this.card({ scope, tally: scope.anywhere, depth: null, listed, reentered: false, onward }, nodes);
    } else if (named.name === "Tree") {
      scope.tree.add("treeExtra", 3);
      this.tree({ scope, tally: scope.tree, reentered: false }, nodes);
    } else if (isObjectType(named)) {
      for (const fieldNodes of this.collect(this.subselections(nodes)).values()) {
        const field = named.getFields()[fieldNodes[0]!.name.value];
        // A trashed card, a change's cards: cards of the scope's tree.
        if (field) this.enter(field.type, fieldNodes, scope, onward, listed);
      }
    }
  }

  private card(place: CardPlace, nodes: FieldNode[]): void {
    for (const [key, fieldNodes] of this.collect(this.subselections(nodes))) {
      const name = fieldNodes[0]!.name.value;
      const tally = place.tally;
      tally.add("extra", keyBytes(key));
      if (Object.hasOwn(CARD_VALUES, name)) {
        if (place.reentered) {
          if (CARD_VALUES[name]![1] === Infinity) refuse(`\`${name}\` under \`parent\` inside a list ${REENTRY}`);
          tally.add("extra", CARD_VALUES[name]![1]);
        } else tally.add(name, 1);
      } else if (Object.hasOwn(CARD_EXTRAS, name)) {
        tally.add("extra", CARD_EXTRAS[name]!);
      } else if (name === "children") {
        if (place.reentered) refuse(`\`children\` under \`parent\` inside a list ${REENTRY}`);
        tally.add("extra", 2);
        const depth = place.depth === null ? null : place.depth + 1;
        const scope = place.onward;
        const childTally = depth === null ? scope.anywhere : scope.depth(depth);
        childTally.add("extra", 3);
        this.card({ scope, tally: childTally, depth, listed: true, reentered: false, onward: scope }, fieldNodes);
      } else if (name === "parent") {
        tally.add("extra", 4);
        if (place.listed || place.reentered) {
          this.card({ ...place, reentered: true }, fieldNodes);
        } else {
          const scope = place.onward;
          scope.anywhere.add("extra", 3);
          this.card({ scope, tally: scope.anywhere, depth: null, listed: false, reentered: false, onward: scope }, fieldNodes);
        }
      } else if (name === "tree") {
        tally.add("extra", 2);
        if (place.listed || place.reentered) this.tree({ scope: place.scope, tally, reentered: true }, fieldNodes);
        else {
          place.onward.tree.add("treeExtra", 3);
          this.tree({ scope: place.onward, tally: place.onward.tree, reentered: false }, fieldNodes);
        }
      } else if (name === "versions") {
        if (place.reentered) refuse(`\`versions\` under \`parent\` inside a list ${REENTRY}`);
        tally.add("versions", 1);
      } else {
        throw new Error(`answer-bound.ts does not know Card.${name}: give it a rule.`);
      }
    }
  }

  private tree(place: TreePlace, nodes: FieldNode[]): void {
    for (const [key, fieldNodes] of this.collect(this.subselections(nodes))) {
      const name = fieldNodes[0]!.name.value;
      const tally = place.tally;
      tally.add(place.reentered ? "extra" : "treeExtra", keyBytes(key));
      if (place.reentered) {
        const bounded = Object.hasOwn(TREE_EXTRAS, name) ? TREE_EXTRAS[name] : Object.hasOwn(TREE_VALUES, name) ? TREE_VALUES[name]![1] : Infinity;
        if (bounded === Infinity || name === "name") refuse(`\`${name}\` under \`tree\` inside a list of cards repeats the tree for each card of the list. Ask for it once, on the tree.`);
        tally.add("extra", bounded!);
      } else if (Object.hasOwn(TREE_VALUES, name)) {
        tally.add(`tree.${name}`, 1);
      } else if (Object.hasOwn(TREE_EXTRAS, name)) {
        tally.add("treeExtra", TREE_EXTRAS[name]!);
      } else if (name === "cards" || name === "roots") {
        const depth = name === "roots" ? 1 : null;
        const cardTally = depth === null ? place.scope.anywhere : place.scope.depth(depth);
        cardTally.add("extra", 3);
        this.card({ scope: place.scope, tally: cardTally, depth, listed: true, reentered: false, onward: place.scope }, fieldNodes);
      } else if (name === "export") {
        tally.add("export", 1);
        const format = this.exportFormat(fieldNodes[0]!);
        const weight = EXPORT_WEIGHT[format] ?? EXPORT_WEIGHT.HTML!;
        place.scope.anywhere.add("content", weight.content);
        place.scope.anywhere.add("extra", weight.bytes);
      } else if (name === "history" || name === "collaborators") {
        tally.add(name, 1);
      } else if (name === "trash") {
        tally.add("trash", 1);
        const type = this.schema.getType("Tree") as GraphQLObjectType;
        this.enter(type.getFields().trash!.type, fieldNodes, place.scope, place.scope, false);
      } else {
        throw new Error(`answer-bound.ts does not know Tree.${name}: give it a rule.`);
      }
    }
  }

  private exportFormat(node: FieldNode): string {
    const type = this.schema.getType("Tree") as GraphQLObjectType;
    try {
      const format = getArgumentValues(type.getFields().export!, node, this.variables).format;
      return typeof format === "string" ? format.toUpperCase() : "HTML";
    } catch {
      return "HTML";
    }
  }
}

/**
 * The most the answer can weigh against the REST JSON of what it copies, over every size each
 * REST field can take: at a vertex of the box of sizes (the ratio is monotone in each one),
 * or, for a field with no upper size, as that field alone grows (the ratio tends to its copies).
 */
function ratio(tally: Tally, values: Record<string, Range>, frame: number, prefix: string, extra: string): number {
  const fields = Object.keys(values);
  const copies = (field: string) => tally.get(prefix + field);
  let worst = 0;
  for (const field of fields) if (values[field]![1] === Infinity) worst = Math.max(worst, copies(field));
  const varying = fields.filter((field) => values[field]![1] !== Infinity && values[field]![0] !== values[field]![1]);
  for (let vertex = 0; vertex < 1 << varying.length; vertex++) {
    let answer = tally.get(extra);
    let rest = frame;
    for (const field of fields) {
      const [least, most] = values[field]!;
      const size = varying.includes(field) && vertex & (1 << varying.indexOf(field)) ? most : least;
      answer += copies(field) * size;
      rest += size;
    }
    worst = Math.max(worst, answer / rest);
  }
  return worst;
}

/** Words for a refusal: what was asked too often. */
function tooMany(what: string, found: number, limit: number): string {
  return (
    `This query could answer ${what} up to ${found > 99 ? "over 99" : Number(found.toFixed(1))} times over; at most ${limit} are allowed ` +
    "(aliases, `cards` beside `roots`, `children` nested under `cards` each count). Ask for each thing once: " +
    "a tree's flat `cards` list holds every card once, and `roots` with nested `children` too."
  );
}

/**
 * @throws ValidationError when the operation re-enters a list's cards through `parent` or
 *   `tree`, or its answer could be more than `limit` times the JSON of what it reads.
 */
export function boundAnswer(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Map<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
  limit: number,
): void {
  const walk = new Walk(schema, fragments, variables);
  walk.operation(operation);
  const { card, tree } = walk.worst();
  const cards = ratio(card, CARD_VALUES, CARD_FRAME, "", "extra");
  if (cards > limit) refuse(tooMany("each card", cards, limit));
  const trees = ratio(tree, TREE_VALUES, TREE_FRAME, "tree.", "treeExtra");
  if (trees > limit) refuse(tooMany("each tree's record (name, users, ...)", trees, limit));
  for (const what of COUNTED) {
    const found = card.get(what) + tree.get(what);
    if (found > limit) refuse(tooMany(`\`${what === "schema" ? "__schema" : what}\``, found, limit));
  }
}
