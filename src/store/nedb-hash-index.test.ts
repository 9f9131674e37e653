/**
 * The hash index answers the calls NeDB's datastore makes (insert, update, remove, lookups)
 * as the index contract says: checked on random histories against a plain model (the list
 * of documents that should be in, and which keys each is under), including unique
 * refusals and their all-or-nothing undo. NeDB's own AVL index is not the oracle: it loses
 * documents when keys are missing, dates or empty arrays (found by this very test), and
 * our records never hold such keys.
 */
import { createRequire } from "node:module";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HashIndex } from "./nedb-hash-index.js";

type Doc = Record<string, unknown>;

const require = createRequire(import.meta.url);
const model = require("@seald-io/nedb/lib/model.js") as { compareThings(a: unknown, b: unknown): number };

const ids = (docs: Doc[]) => docs.map((doc) => doc._id as string).sort();

/** The keys a document is under, by the contract (NeDB's reading of a field). */
function keysOf(doc: Doc, sparse: boolean): unknown[] {
  const value = doc.field;
  const missing =
    value === undefined ||
    (typeof value === "object" && value !== null && Object.values(value).every((part) => part === undefined));
  if (missing && sparse) return [];
  const all = Array.isArray(value) ? value : [value];
  return all.filter((key, i) => all.findIndex((other) => model.compareThings(other, key) === 0) === i);
}

const sameKey = (a: unknown, b: unknown) => model.compareThings(a, b) === 0;

const keyArb = fc.oneof(
  fc.constantFrom("a", "b", "c", "", "10"),
  fc.constantFrom(1, 2, 10, 0),
  fc.constant(null),
  fc.constant(undefined),
  fc.constantFrom(true, false),
  fc.constantFrom(new Date(0), new Date(1000)),
  fc.array(fc.constantFrom("a", "b", "c", 1), { maxLength: 3 }),
);

type Op =
  | { kind: "insert"; keys: unknown[] }
  | { kind: "remove"; pick: number }
  | { kind: "update"; picks: number[]; keys: unknown[] };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.array(keyArb, { minLength: 1, maxLength: 4 }).map((keys) => ({ kind: "insert" as const, keys })),
  fc.nat().map((pick) => ({ kind: "remove" as const, pick })),
  fc
    .tuple(fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), fc.array(keyArb, { minLength: 3, maxLength: 3 }))
    .map(([picks, keys]) => ({ kind: "update" as const, picks, keys })),
);

function doc(n: number, key: unknown): Doc {
  return key === undefined ? { _id: `d${n}` } : { _id: `d${n}`, field: key };
}

describe("HashIndex", () => {
  for (const options of [
    { unique: false, sparse: false },
    { unique: true, sparse: false },
    { unique: true, sparse: true },
    { unique: false, sparse: true },
  ]) {
    it(`keeps the index contract (unique: ${options.unique}, sparse: ${options.sparse})`, () => {
      fc.assert(
        fc.property(fc.array(opArb, { maxLength: 30 }), fc.array(keyArb, { minLength: 1, maxLength: 4 }), (ops, probes) => {
          const index = new HashIndex({ fieldName: "field", ...options });
          let live: Doc[] = [];
          let next = 0;
          /** Whether `docs` can all be in beside `others` under a unique index. */
          const fits = (docs: Doc[], others: Doc[]) => {
            if (!options.unique) return true;
            const taken: unknown[] = others.flatMap((d) => keysOf(d, options.sparse));
            for (const d of docs) {
              for (const key of keysOf(d, options.sparse)) {
                if (taken.some((other) => sameKey(other, key))) return false;
                taken.push(key);
              }
            }
            return true;
          };
          const attempt = (call: () => void, shouldWork: boolean) => {
            if (shouldWork) call();
            else expect(call).toThrow(expect.objectContaining({ errorType: "uniqueViolated" }));
          };
          for (const op of ops) {
            if (op.kind === "insert") {
              const docs = op.keys.map((key) => doc(next++, key));
              const ok = fits(docs, live);
              attempt(() => index.insert(docs.length === 1 ? docs[0] : docs), ok);
              if (ok) live = [...live, ...docs];
            } else if (op.kind === "remove" && live.length > 0) {
              const gone = live[op.pick % live.length];
              index.remove(gone);
              live = live.filter((d) => d !== gone);
            } else if (op.kind === "update" && live.length > 0) {
              const picks = [...new Set(op.picks.map((p) => p % live.length))];
              const pairs = picks.map((at, i) => ({ oldDoc: live[at], newDoc: doc(Number((live[at]._id as string).slice(1)), op.keys[i]) }));
              const olds = new Set(pairs.map((pair) => pair.oldDoc));
              const ok = fits(
                pairs.map((pair) => pair.newDoc),
                live.filter((d) => !olds.has(d)),
              );
              attempt(() => (pairs.length === 1 ? index.update(pairs[0].oldDoc, pairs[0].newDoc) : index.update(pairs)), ok);
              if (ok) live = live.map((d) => pairs.find((pair) => pair.oldDoc === d)?.newDoc ?? d);
            }
            const indexed = live.filter((d) => keysOf(d, options.sparse).length > 0);
            expect(ids(index.getAll())).toEqual(ids(indexed));
          }
          const under = (key: unknown) => live.filter((d) => keysOf(d, options.sparse).some((k) => sameKey(k, key)));
          for (const probe of probes) {
            const expected = Array.isArray(probe) ? [...new Set(probe.flatMap(under))] : under(probe);
            expect(ids(index.getMatching(probe))).toEqual(ids(expected));
          }
          const inBounds = live.filter((d) =>
            keysOf(d, options.sparse).some((k) => typeof k === "number" && k >= 1 && k < 10),
          );
          expect(ids(index.getBetweenBounds({ $gte: 1, $lt: 10 }))).toEqual(ids(inBounds));
        }),
        { numRuns: 300 },
      );
    });
  }

  it("refuses a second document under a unique key with NeDB's error, and keeps the first", () => {
    const index = new HashIndex({ fieldName: "email", unique: true });
    const first = { _id: "1", email: "a@example.com" };
    index.insert(first);
    expect(() => index.insert({ _id: "2", email: "a@example.com" })).toThrow(
      expect.objectContaining({ errorType: "uniqueViolated", key: "a@example.com" }),
    );
    expect(index.getMatching("a@example.com")).toEqual([first]);
  });

  it("indexes each element of an array field once, and finds documents by any of them", () => {
    const index = new HashIndex({ fieldName: "users" });
    const tree = { _id: "t", users: ["u1", "u2", "u1"] };
    index.insert(tree);
    expect(index.getMatching("u1")).toEqual([tree]);
    expect(index.getMatching("u2")).toEqual([tree]);
    expect(index.getMatching(["u1", "u2"])).toEqual([tree]);
    index.remove(tree);
    expect(index.getAll()).toEqual([]);
  });

  it("reads dotted fields as NeDB does", () => {
    const index = new HashIndex({ fieldName: "a.b" });
    const one = { _id: "1", a: { b: "x" } };
    index.insert(one);
    expect(index.getMatching("x")).toEqual([one]);
  });
});
