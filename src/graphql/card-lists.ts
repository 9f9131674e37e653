/**
 * Whole-tree card lists without graphql-js (issue 14: a 10,000-card tree read right after an
 * edit within 2x the REST read). graphql-js resolves and stores every selected field of
 * every card (~100 ms for 10,000 cards × 8 fields), and the result cache cannot help right
 * after an edit. So when `Tree.cards` or `Tree.roots` is asked for in a query with a
 * selection this module can write itself, the field's JSON text is written here from the
 * read model's snapshot, and spliced into the response where graphql-js left the list:
 *
 * - Writable selections (`plan`): on Card, only the fields below that read nothing but the
 *   card record (`RECORD_FIELDS`), `depth`, `__typename`, and `children` with a writable
 *   selection, through aliases, fragment spreads and inline fragments on Card, without any
 *   directive and without arguments. Anything else (`parent`, `tree`, `versions`, a
 *   directive, a mutation or subscription) executes as usual: this is a shortcut for the
 *   common shapes, never the only way to an answer.
 * - What graphql-js would write: keys in the order its field collection gives them (first
 *   appearance, fragments merged, each fragment once), values as JSON.stringify writes the
 *   serialized scalars. Tested against ordinary execution (test/graphql/card-lists.test.ts).
 * - The result budget counts the same values and characters, in the same order, as the
 *   resolvers would (each list's length × its selection's width before its items, each
 *   `content` as it is written), so a request over a limit fails with the same error.
 * - Each card's run of record fields is written once per selection and card record
 *   (`runs`, held weakly by both), so after an edit only the edited card is written anew;
 *   the rest is joining strings. The tree's shape comes from the snapshot (shared across
 *   edits in place), so nothing is re-walked either.
 * - Permissions are untouched: the tree was authorised by the field that returned it, and
 *   the list is what the snapshot of that tree holds, as the resolvers would read it.
 *
 * Splicing (`Splices`): the resolver returns `[]` and notes the field's path and text; once
 * the result is final (yoga's `onResultProcess`), each noted path gets a placeholder string
 * unique to the request, and the result's `stringify` (which yoga's result processors use)
 * replaces the placeholders with the texts. A path that errors nulled on the way has no
 * placeholder and nothing is spliced there.
 */
import { randomUUID } from "node:crypto";
import {
  getOperationAST,
  Kind,
  type ExecutionResult,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLResolveInfo,
  type SelectionSetNode,
} from "graphql";
import type { Path } from "graphql/jsutils/Path.js";
import { isAsyncIterable, type Plugin } from "graphql-yoga";
import { cardOf, type TreeSnapshot } from "../domain/read-model.js";
import type { Card, StoredCard } from "../shared/records.js";
import type { GraphQLContext } from "./context.js";
import { selectionWidth, type ResultBudget } from "./result-budget.js";

/** Card fields read from the record alone, as their JSON values. */
const RECORD_FIELDS: Record<string, (card: Card) => string> = {
  id: (card) => JSON.stringify(card._id),
  treeId: (card) => JSON.stringify(card.treeId),
  parentId: (card) => JSON.stringify(card.parentId ?? null),
  content: (card) => JSON.stringify(card.content),
  position: (card) => JSON.stringify(card.position),
  createdAt: (card) => JSON.stringify(card.createdAt),
  updatedAt: (card) => JSON.stringify(card.updatedAt),
  version: (card) => JSON.stringify(card.__v ?? 0),
  __typename: () => '"Card"',
};

type Segment =
  /** Consecutive record fields, written once per card record. */
  | { kind: "record"; fields: { key: string; value: (card: Card) => string }[]; contents: number; runs: WeakMap<StoredCard, string> }
  | { kind: "depth"; key: string }
  | { kind: "children"; key: string; level: Level };

/** What is written of each card of one list. */
interface Level {
  segments: Segment[];
  /** Values per card, as the result budget counts them (result-budget.ts `widthOf`). */
  width: number;
}

/** Plans by the field node of the list (documents are parsed once and cached by yoga); null: not writable. */
const plans = new WeakMap<FieldNode, Level | null>();

/** Why a selection is not writable here; caught by `plan`. */
class NotWritable extends Error {}

function levelOf(fields: readonly FieldNode[], fragments: Record<string, FragmentDefinitionNode>): Level {
  // Response keys in first-appearance order, with every field node answering to each.
  const groups = new Map<string, FieldNode[]>();
  const visited = new Set<string>();
  const collect = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.directives?.length) throw new NotWritable();
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        const group = groups.get(key);
        if (group) group.push(selection);
        else groups.set(key, [selection]);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (selection.typeCondition && selection.typeCondition.name.value !== "Card") throw new NotWritable();
        collect(selection.selectionSet);
      } else {
        const name = selection.name.value;
        if (visited.has(name)) continue;
        visited.add(name);
        const fragment = fragments[name];
        if (!fragment || fragment.typeCondition.name.value !== "Card") throw new NotWritable();
        collect(fragment.selectionSet);
      }
    }
  };
  for (const field of fields) {
    if (!field.selectionSet) throw new NotWritable();
    collect(field.selectionSet);
  }
  const segments: Segment[] = [];
  for (const [key, group] of groups) {
    const name = group[0].name.value;
    if (group.some((field) => field.name.value !== name || (field.arguments?.length ?? 0) > 0)) throw new NotWritable();
    const value = Object.hasOwn(RECORD_FIELDS, name) ? RECORD_FIELDS[name] : undefined;
    if (value) {
      const last = segments[segments.length - 1];
      const record = last?.kind === "record" ? last : undefined;
      const field = { key: JSON.stringify(key), value };
      const contents = name === "content" ? 1 : 0;
      if (record) {
        record.fields.push(field);
        record.contents += contents;
      } else segments.push({ kind: "record", fields: [field], contents, runs: new WeakMap() });
    } else if (name === "depth") segments.push({ kind: "depth", key: JSON.stringify(key) });
    else if (name === "children") segments.push({ kind: "children", key: JSON.stringify(key), level: levelOf(group, fragments) });
    else throw new NotWritable();
  }
  const spread = new Set<string>();
  const width = Math.max(1, fields.reduce((sum, field) => sum + selectionWidth(field.selectionSet, fragments, spread), 0));
  return { segments, width };
}

/** The plan for the list field `info` resolves, or null when its selection is not writable here. */
function plan(info: GraphQLResolveInfo): Level | null {
  const first = info.fieldNodes[0]!;
  const single = info.fieldNodes.length === 1;
  if (single && plans.has(first)) return plans.get(first)!;
  let level: Level | null;
  try {
    level = levelOf(info.fieldNodes, info.fragments);
  } catch (error) {
    if (!(error instanceof NotWritable)) throw error;
    level = null;
  }
  // Several nodes merged under one key are merged anew per execution: only single ones are kept.
  if (single) plans.set(first, level);
  return level;
}

/** Writes cards of one snapshot for one plan, counting them in the request's budget. */
class Writer {
  readonly out: string[] = [];
  private readonly shape;

  constructor(
    private readonly snapshot: TreeSnapshot,
    private readonly budget: ResultBudget,
  ) {
    this.shape = snapshot.shape();
  }

  /** The cards at `indexes` (tree order), as a JSON array. */
  list(level: Level, indexes: Iterable<number>, count: number): void {
    this.budget.records(count, level.width);
    this.out.push("[");
    let first = true;
    for (const index of indexes) {
      if (!first) this.out.push(",");
      first = false;
      this.card(level, index);
    }
    this.out.push("]");
  }

  private card(level: Level, index: number): void {
    const entry = this.snapshot.ordered[index];
    const out = this.out;
    out.push("{");
    level.segments.forEach((segment, i) => {
      if (i > 0) out.push(",");
      if (segment.kind === "record") {
        let run = segment.runs.get(entry.card);
        if (run === undefined) {
          const card = cardOf(entry.card);
          run = segment.fields.map((field) => `${field.key}:${field.value(card)}`).join(",");
          segment.runs.set(entry.card, run);
        }
        for (let n = 0; n < segment.contents; n++) this.budget.text(entry.card.content);
        out.push(run);
      } else if (segment.kind === "depth") {
        out.push(segment.key, ":", String(entry.depth));
      } else {
        out.push(segment.key, ":");
        this.list(segment.level, this.childrenOf(index), this.shape.childCount[index]);
      }
    });
    out.push("}");
  }

  /** The children of the card at `index`, or the first column for -1, in sibling order. */
  *childrenOf(index: number): Generator<number> {
    const end = index < 0 ? this.shape.end.length : this.shape.end[index];
    for (let child = index + 1; child < end; child = this.shape.end[child]) yield child;
  }

  get rootCount(): number {
    return this.shape.rootCount;
  }
}

function* range(count: number): Generator<number> {
  for (let i = 0; i < count; i++) yield i;
}

/** Lists written here since start: for tests (that a shape takes this path) and the bench. */
export const writtenLists = { count: 0 };

/** The response paths of one execution whose lists were written here, with their texts. */
export class Splices {
  private readonly noted: { path: (string | number)[]; text: string }[] = [];

  /**
   * Writes the list `info` resolves (`"cards"`: every card in tree order; `"roots"`: the first
   * column) if its selection is writable here, and notes it for its path.
   * @returns true when written: the resolver then returns `[]` in its place.
   * @throws the budget's error, as the resolvers would.
   */
  write(which: "cards" | "roots", snapshot: TreeSnapshot, budget: ResultBudget, info: GraphQLResolveInfo): boolean {
    const level = plan(info);
    if (!level) return false;
    const writer = new Writer(snapshot, budget);
    if (which === "cards") writer.list(level, range(snapshot.ordered.length), snapshot.ordered.length);
    else writer.list(level, writer.childrenOf(-1), writer.rootCount);
    this.noted.push({ path: pathOf(info.path), text: writer.out.join("") });
    writtenLists.count++;
    return true;
  }

  /**
   * `result` with a placeholder at each noted path that is still there, and a `stringify`
   * that writes the noted texts in their place; `result` itself when nothing was noted.
   */
  apply(result: ExecutionResult): ExecutionResult {
    if (this.noted.length === 0 || !result.data) return result;
    const tag = `cardtree-list-${randomUUID()}-`;
    const texts = new Map<string, string>();
    for (const { path, text } of this.noted) {
      let at: unknown = result.data;
      for (const key of path.slice(0, -1)) at = at !== null && typeof at === "object" ? (at as Record<string | number, unknown>)[key] : undefined;
      const last = path[path.length - 1]!;
      if (at === null || typeof at !== "object" || !Array.isArray((at as Record<string | number, unknown>)[last])) continue;
      const placeholder = `${tag}${texts.size}`;
      (at as Record<string | number, unknown>)[last] = placeholder;
      texts.set(placeholder, text);
    }
    if (texts.size === 0) return result;
    const pattern = new RegExp(`"(${tag}\\d+)"`, "g");
    const stringify = (value: unknown) =>
      JSON.stringify(value)
        .split(pattern)
        .map((part, i) => (i % 2 === 1 ? texts.get(part)! : part))
        .join("");
    return Object.assign(result, { stringify });
  }
}

function pathOf(path: Path): (string | number)[] {
  const keys: (string | number)[] = [];
  for (let at: Path | undefined = path; at; at = at.prev) keys.push(at.key);
  return keys.reverse();
}

/** The yoga plugin: queries get their `Splices`; the final result of each gets them applied. */
export function cardListsPlugin(): Plugin<GraphQLContext> {
  const byRequest = new WeakMap<Request, Splices>();
  return {
    onExecute({ args }) {
      if (getOperationAST(args.document, args.operationName)?.operation !== "query") return;
      const splices = new Splices();
      args.contextValue.splices = splices;
      byRequest.set(args.contextValue.request, splices);
    },
    onResultProcess({ request, result, setResult }) {
      const splices = byRequest.get(request);
      if (!splices || Array.isArray(result) || isAsyncIterable(result)) return;
      byRequest.delete(request);
      setResult(splices.apply(result));
    },
  };
}
