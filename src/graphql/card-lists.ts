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
 * Splicing (`Splices`): the resolver returns `[]` and notes the field's path and bytes; once
 * the result is final (yoga's `onResultProcess`), each noted path gets a placeholder string
 * unique to the request, yoga writes the response as usual (whatever its media type), and
 * `onResponse` puts the bytes where the placeholders are (JSON text never holds a raw line
 * break, so event-stream framing is kept too). A path that errors nulled on the way has no
 * placeholder and nothing is spliced there. The lists are written as UTF-8 bytes from the
 * start (REST's cards body is, too): one 3.5 MB string joined and encoded again cost as
 * much as writing it.
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
import { cardOf, type TreeShape, type TreeSnapshot } from "../domain/read-model.js";
import type { Card, StoredCard } from "../shared/records.js";
import type { GraphQLContext } from "./context.js";
import type { ResultBudget } from "./result-budget.js";
import { selectionWidth } from "./selections.js";

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
  | {
      kind: "record";
      fields: { key: string; value: (card: Card) => string }[];
      contents: number;
      runs: WeakMap<StoredCard, Buffer>;
    }
  | { kind: "depth"; key: Buffer }
  | { kind: "children"; key: Buffer; level: Level };

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

/** `"key":` as bytes. */
const keyBytes = (key: string) => Buffer.from(`${JSON.stringify(key)}:`);

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
    } else if (name === "depth") segments.push({ kind: "depth", key: keyBytes(key) });
    else if (name === "children") segments.push({ kind: "children", key: keyBytes(key), level: levelOf(group, fragments) });
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

const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const COMMA = 0x2c;

/** Bytes written into one buffer that grows as needed. */
class Bytes {
  private buffer: Buffer;
  length = 0;

  constructor(expected: number) {
    this.buffer = Buffer.allocUnsafe(Math.max(1024, expected));
  }

  private room(more: number): void {
    if (this.length + more <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + more));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  byte(value: number): void {
    this.room(1);
    this.buffer[this.length++] = value;
  }

  bytes(value: Buffer): void {
    this.room(value.length);
    if (value.length <= 16) for (let i = 0; i < value.length; i++) this.buffer[this.length++] = value[i];
    else this.length += value.copy(this.buffer, this.length);
  }

  /** A whole number >= 0, in decimal. */
  digits(value: number): void {
    const text = String(value);
    this.room(text.length);
    for (let i = 0; i < text.length; i++) this.buffer[this.length++] = text.charCodeAt(i);
  }

  done(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

/** A stand-in key for a plan used as `roots` (a plan is one field's, but be safe). */
const rootKeys = new WeakMap<Level, Level>();
function rootsKey(level: Level): Level {
  let key = rootKeys.get(level);
  if (!key) rootKeys.set(level, (key = { segments: [], width: 0 }));
  return key;
}

/** A list as last written for one plan and one arrangement of a tree, to patch the next from. */
interface Written {
  ordered: TreeSnapshot["ordered"];
  bytes: Buffer;
  /** Each run of record fields written: where, how long, which card (index in `ordered`), which segment. */
  at: number[];
  lengths: number[];
  cards: number[];
  segments: Extract<Segment, { kind: "record" }>[];
  /** What the budget counted for it. */
  values: number;
  characters: number;
}

/** Lists kept per arrangement of a tree: distinct whole-tree queries of it at once, each ~3.5 MB at 10k cards. */
const PLANS_PER_ARRANGEMENT = 2;

/** The last list written per arrangement (shared by the snapshots of edits in place) and plan. */
const lastWritten = new WeakMap<TreeShape, Map<Level, Written>>();

/** The record run of `card` for `segment`, written once per card record. */
function runOf(segment: Extract<Segment, { kind: "record" }>, card: StoredCard): Buffer {
  let run = segment.runs.get(card);
  if (run === undefined) {
    const view = cardOf(card);
    run = Buffer.from(segment.fields.map((field) => `${field.key}:${field.value(view)}`).join(","));
    segment.runs.set(card, run);
  }
  return run;
}

/**
 * `last` with the runs of the cards that differ in `snapshot` swapped, when the budget has
 * room for all of it (else the caller writes the list card by card, so a limit is hit
 * where the resolvers would hit it). Null when it cannot be patched.
 */
function patched(last: Written, snapshot: TreeSnapshot, budget: ResultBudget): Written | null {
  const ordered = snapshot.ordered;
  if (ordered.length !== last.ordered.length) return null;
  let characters = last.characters;
  const changed: number[] = [];
  for (let i = 0; i < last.cards.length; i++) {
    const index = last.cards[i];
    if (ordered[index].card === last.ordered[index].card) continue;
    changed.push(i);
    const contents = last.segments[i].contents;
    characters += contents * (ordered[index].card.content.length - last.ordered[index].card.content.length);
  }
  if (!budget.fits(last.values, characters)) return null;
  budget.charge(last.values, characters);
  if (changed.length === 0) return { ...last, ordered, characters };
  const fresh = changed.map((i) => runOf(last.segments[i], ordered[last.cards[i]].card));
  let length = last.bytes.length;
  changed.forEach((i, n) => (length += fresh[n].length - last.lengths[i]));
  const bytes = Buffer.allocUnsafe(length);
  const at = last.at.slice();
  const lengths = last.lengths.slice();
  let read = 0;
  let write = 0;
  let shift = 0;
  let done = 0;
  changed.forEach((i, n) => {
    for (; done < i; done++) at[done] = last.at[done] + shift;
    write += last.bytes.copy(bytes, write, read, last.at[i]);
    at[i] = write;
    lengths[i] = fresh[n].length;
    write += fresh[n].copy(bytes, write);
    read = last.at[i] + last.lengths[i];
    shift += fresh[n].length - last.lengths[i];
    done = i + 1;
  });
  last.bytes.copy(bytes, write, read);
  for (; done < at.length; done++) at[done] = last.at[done] + shift;
  return { ...last, ordered, bytes, at, lengths, characters };
}

/** Writes cards of one snapshot for one plan, counting them in the request's budget. */
class Writer {
  readonly out: Bytes;
  /** As `Written` has them. */
  readonly at: number[] = [];
  readonly lengths: number[] = [];
  readonly cards: number[] = [];
  readonly segments: Extract<Segment, { kind: "record" }>[] = [];
  values = 0;
  characters = 0;
  private readonly ordered;
  private readonly end: Int32Array;
  private readonly childCount: Int32Array;

  constructor(
    snapshot: TreeSnapshot,
    private readonly budget: ResultBudget,
    expected: number,
  ) {
    this.out = new Bytes(expected);
    this.ordered = snapshot.ordered;
    const shape = snapshot.shape();
    this.end = shape.end;
    this.childCount = shape.childCount;
  }

  /** Every card in tree order. */
  all(level: Level): void {
    const count = this.ordered.length;
    this.budget.charge(count * level.width, 0);
    this.values += count * level.width;
    this.out.byte(OPEN_BRACKET);
    for (let i = 0; i < count; i++) {
      if (i > 0) this.out.byte(COMMA);
      this.card(level, i);
    }
    this.out.byte(CLOSE_BRACKET);
  }

  /** The children of the card at `parent` in sibling order; of -1: the first column. */
  children(level: Level, parent: number, count: number): void {
    this.budget.charge(count * level.width, 0);
    this.values += count * level.width;
    this.out.byte(OPEN_BRACKET);
    const end = parent < 0 ? this.ordered.length : this.end[parent];
    for (let child = parent + 1; child < end; child = this.end[child]) {
      if (child > parent + 1) this.out.byte(COMMA);
      this.card(level, child);
    }
    this.out.byte(CLOSE_BRACKET);
  }

  private card(level: Level, index: number): void {
    const entry = this.ordered[index];
    const out = this.out;
    const segments = level.segments;
    out.byte(OPEN_BRACE);
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i];
      if (i > 0) out.byte(COMMA);
      if (segment.kind === "record") {
        const run = runOf(segment, entry.card);
        for (let n = 0; n < segment.contents; n++) this.budget.charge(0, entry.card.content.length);
        this.characters += segment.contents * entry.card.content.length;
        this.at.push(out.length);
        this.lengths.push(run.length);
        this.cards.push(index);
        this.segments.push(segment);
        out.bytes(run);
      } else if (segment.kind === "depth") {
        out.bytes(segment.key);
        out.digits(entry.depth);
      } else {
        out.bytes(segment.key);
        this.children(segment.level, index, this.childCount[index]);
      }
    }
    out.byte(CLOSE_BRACE);
  }
}

/** Lists written here since start: for tests (that a shape takes this path) and the bench. */
export const writtenLists = { count: 0 };

/** The response paths of one execution whose lists were written here, with their bytes. */
export class Splices {
  private readonly noted: { path: (string | number)[]; bytes: Buffer }[] = [];
  /** Placeholder → bytes, once `apply` has put them in the result. */
  private readonly placed = new Map<string, Buffer>();
  private pattern: RegExp | null = null;

  /**
   * Writes the list `info` resolves (`"cards"`: every card in tree order; `"roots"`: the first
   * column) if its selection is writable here, and notes it for its path.
   * @returns true when written: the resolver then returns `[]` in its place.
   * @throws the budget's error, as the resolvers would.
   */
  write(which: "cards" | "roots", snapshot: TreeSnapshot, budget: ResultBudget, info: GraphQLResolveInfo): boolean {
    const level = plan(info);
    if (!level) return false;
    const key = which === "cards" ? level : rootsKey(level);
    const shape = snapshot.shape();
    let held = lastWritten.get(shape);
    if (!held) lastWritten.set(shape, (held = new Map()));
    const last = held.get(key);
    let written = last && patched(last, snapshot, budget);
    if (!written) {
      const writer = new Writer(snapshot, budget, last?.bytes.length ?? 0);
      if (which === "cards") writer.all(level);
      else writer.children(level, -1, shape.rootCount);
      const { at, lengths, cards, segments, values, characters } = writer;
      written = { ordered: snapshot.ordered, bytes: writer.out.done(), at, lengths, cards, segments, values, characters };
    }
    // Most recently written last; a few plans per arrangement (each holds the tree's bytes once).
    held.delete(key);
    held.set(key, written);
    for (const old of held.keys()) {
      if (held.size <= PLANS_PER_ARRANGEMENT) break;
      held.delete(old);
    }
    this.noted.push({ path: pathOf(info.path), bytes: written.bytes });
    writtenLists.count++;
    return true;
  }

  /** Puts a placeholder string, unique to this request, at each noted path still in `result`. */
  apply(result: ExecutionResult): void {
    if (this.noted.length === 0 || !result.data) return;
    const tag = `cardtree-list-${randomUUID()}-`;
    for (const { path, bytes } of this.noted) {
      let at: unknown = result.data;
      for (const key of path.slice(0, -1)) at = at !== null && typeof at === "object" ? (at as Record<string | number, unknown>)[key] : undefined;
      const last = path[path.length - 1]!;
      if (at === null || typeof at !== "object" || !Array.isArray((at as Record<string | number, unknown>)[last])) continue;
      const placeholder = `${tag}${this.placed.size}`;
      (at as Record<string | number, unknown>)[last] = placeholder;
      this.placed.set(placeholder, bytes);
    }
    if (this.placed.size > 0) this.pattern = new RegExp(`"(${tag}\\d+)"`);
  }

  /** Whether `apply` put any placeholder in the result. */
  get placedAny(): boolean {
    return this.pattern !== null;
  }

  /** `text` (a response body) with the bytes in place of the placeholders. */
  splice(text: string): Buffer<ArrayBuffer> {
    const parts = text.split(new RegExp(this.pattern?.source ?? "(?!)", "g"));
    return Buffer.concat(parts.map((part, i) => (i % 2 === 1 ? this.placed.get(part)! : Buffer.from(part))));
  }
}

function pathOf(path: Path): (string | number)[] {
  const keys: (string | number)[] = [];
  for (let at: Path | undefined = path; at; at = at.prev) keys.push(at.key);
  return keys.reverse();
}

/**
 * The yoga plugin: queries get their `Splices`; the final result of each gets its
 * placeholders, and the response its bytes. Before the result cache's plugin, which stores
 * the response as sent.
 */
export function cardListsPlugin(): Plugin<GraphQLContext> {
  const byRequest = new WeakMap<Request, Splices>();
  return {
    onExecute({ args }) {
      if (getOperationAST(args.document, args.operationName)?.operation !== "query") return;
      const splices = new Splices();
      args.contextValue.splices = splices;
      byRequest.set(args.contextValue.request, splices);
    },
    onResultProcess({ request, result }) {
      const splices = byRequest.get(request);
      if (!splices || Array.isArray(result) || isAsyncIterable(result)) return;
      splices.apply(result);
    },
    async onResponse({ request, response, setResponse, fetchAPI }) {
      const splices = byRequest.get(request);
      byRequest.delete(request);
      if (!splices?.placedAny) return;
      const body = splices.splice(await response.text());
      // The same headers but the length (a copy through the Headers constructor lost them).
      const headers: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        if (name !== "content-length") headers[name] = value;
      });
      setResponse(new fetchAPI.Response(body, { status: response.status, statusText: response.statusText, headers }));
    },
  };
}
