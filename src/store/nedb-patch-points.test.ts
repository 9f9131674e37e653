/**
 * The points where the store reaches inside @seald-io/nedb and nedb-promises (issue 13):
 * private modules it requires, methods it replaces, fields it reads. Both packages are
 * pinned to exact versions in package.json; an upgrade that moves or renames any of these
 * points fails here, by name, instead of somewhere deep in a crash test.
 */
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Datastore from "nedb-promises";
import { afterEach, describe, expect, it } from "vitest";
import { HashIndex } from "./nedb-hash-index.js";
import { nedbModel } from "./nedb-recovery.js";

const require = createRequire(import.meta.url);
const manifest = JSON.parse(readFileSync(path.resolve(import.meta.dirname, "../../package.json"), "utf8")) as {
  dependencies: Record<string, string>;
};
const installedVersion = (name: string) =>
  (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), "utf8")) as { version: string }).version;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempFile(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "nedb-points-"));
  dirs.push(dir);
  return path.join(dir, "things.db");
}

// A loose view of NeDB's datastore: the fields the store touches.
type Internals = {
  persistence: Record<string, unknown>;
  executor: Record<string, unknown>;
  indexes: Record<string, unknown>;
  [method: string]: unknown;
};
const internalsOf = (db: Datastore<Record<string, unknown>>) => (db as unknown as { __original: Internals }).__original;

describe("pinned versions", () => {
  it.each(["@seald-io/nedb", "nedb-promises"])("%s is a direct dependency pinned to the installed version", (name) => {
    expect(manifest.dependencies[name], `${name} must be pinned exactly in package.json`).toMatch(/^\d+\.\d+\.\d+$/);
    expect(installedVersion(name)).toBe(manifest.dependencies[name]);
  });
});

describe("private modules the store requires", () => {
  it("lib/storage.js still offers ensureDatafileIntegrityAsync, which creates a missing datafile", async () => {
    const storage = require("@seald-io/nedb/lib/storage.js") as { ensureDatafileIntegrityAsync(file: string): Promise<void> };
    const file = tempFile();
    await storage.ensureDatafileIntegrityAsync(file);
    expect(statSync(file).isFile()).toBe(true);
  });

  it("lib/model.js still writes and reads NeDB's line format, dates as $$date", () => {
    const doc = { _id: "a", at: new Date("2014-08-05T21:46:15.333Z"), n: 1.5, nested: { x: [1, "two"] } };
    const line = nedbModel.serialize(doc);
    expect(JSON.parse(line)).toEqual({ _id: "a", at: { $$date: Date.parse("2014-08-05T21:46:15.333Z") }, n: 1.5, nested: { x: [1, "two"] } });
    expect(nedbModel.deserialize(line)).toEqual(doc);
    expect(nedbModel.getDotValues({ a: { b: 2 } }, ["a.b"])).toBe(2);
    expect(nedbModel.compareThings(1, 2)).toBeLessThan(0);
    expect(nedbModel.compareThings("b", "a")).toBeGreaterThan(0);
  });
});

describe("the datastore behind nedb-promises", () => {
  it("is reachable as __original, with every method and field the store replaces or reads", () => {
    const nedb = internalsOf(Datastore.create({ filename: tempFile(), autoload: false }));
    for (const method of ["loadDatabaseAsync", "persistNewStateAsync"]) expect(typeof nedb.persistence[method], `persistence.${method}`).toBe("function");
    for (const method of ["pushAsync", "processBuffer"]) expect(typeof nedb.executor[method], `executor.${method}`).toBe("function");
    for (const method of ["_resetIndexes", "stopAutocompaction", "compactDatafileAsync", "getAllData"]) expect(typeof nedb[method], method).toBe("function");
    expect(nedb.indexes).toHaveProperty("_id");
  });

  it("loads through persistence.loadDatabaseAsync and appends through persistence.persistNewStateAsync, both replaceable", async () => {
    const db = Datastore.create({ filename: tempFile(), autoload: false });
    const nedb = internalsOf(db);
    const loadOriginal = nedb.persistence.loadDatabaseAsync as () => Promise<void>;
    const appendOriginal = nedb.persistence.persistNewStateAsync as (docs: unknown[]) => Promise<void>;
    const calls: string[] = [];
    nedb.persistence.loadDatabaseAsync = async () => {
      calls.push("load");
      await loadOriginal.call(nedb.persistence);
    };
    nedb.persistence.persistNewStateAsync = async (docs: unknown[]) => {
      calls.push(`append ${docs.length}`);
      await appendOriginal.call(nedb.persistence, docs);
    };
    await db.load();
    await db.insert([{ _id: "x" }, { _id: "y" }]);
    await db.update({ _id: "x" }, { $set: { v: 1 } });
    expect(calls).toEqual(["load", "append 2", "append 1"]);
  });

  it("uses exactly the index methods our hash index implements", () => {
    const Index = require("@seald-io/nedb/lib/indexes.js") as { prototype: object };
    const methods = (proto: object) =>
      Object.getOwnPropertyNames(proto)
        .filter((name) => name !== "constructor")
        .sort();
    expect(methods(HashIndex.prototype)).toEqual(expect.arrayContaining(methods(Index.prototype)));
  });
});
