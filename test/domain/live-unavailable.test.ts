/**
 * A live stream across a short outage of the store (SPEC §11: a database restarting): the
 * notices another process sends meanwhile each ask for a log read, and every one of those
 * reads fails while the store does not answer. The stream must wait for the store and then
 * deliver every change, in order, not reset its reader. On the in-memory store with two
 * domain contexts sharing it (two processes), so the reads can be made to fail at will.
 */
import { describe, expect, it } from "vitest";
import { scryptHasherFor } from "../../src/auth/scrypt-hasher.js";
import { loadConfig } from "../../src/config.js";
import { createCard } from "../../src/domain/cards.js";
import { execute } from "../../src/domain/command.js";
import { createDomainContext } from "../../src/domain/context.js";
import { followTree, type LiveEvent } from "../../src/domain/live.js";
import { createTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { formatsOffThread } from "../../src/formats/off-thread.js";
import { UnavailableError } from "../../src/shared/errors.js";
import { openMemoryStore } from "../../src/store/memory-store.js";

describe("a live stream while the store does not answer for a moment", () => {
  it("delivers every change once the store is back, however many notices came meanwhile", async () => {
    const config = loadConfig({ SIGNUP: "open", EXPORT_WORKERS: "0" });
    const store = openMemoryStore();
    const adapters = () => ({ formats: formatsOffThread(config.exports), hasher: scryptHasherFor(config.limits) });
    const reader = createDomainContext(store, config, adapters());
    const writer = createDomainContext(store, config, adapters());
    const alice = await execute(writer, null, signUp, {}, { email: "alice@example.com", password: "correct horse battery" });
    const tree = await execute(writer, alice, createTree, {}, { name: "Outage" });
    const stream = await followTree(reader, alice, tree._id, { address: "127.0.0.1" });
    const events: LiveEvent[] = [];
    stream.deliverTo((event) => events.push(event) > 0);

    // The store stops answering log reads; the writer's process commits twelve changes and
    // the reader's process hears a notice of each without the change (another process's).
    const since = store.changes.since.bind(store.changes);
    let down = true;
    store.changes.since = (...args) => (down ? Promise.reject(new UnavailableError()) : since(...args));
    for (let i = 0; i < 12; i++) {
      await execute(writer, alice, createCard, { treeId: tree._id }, { treeId: tree._id, parentId: null, position: i, content: `card ${i}` });
      reader.live.hear({ treeId: tree._id, revision: tree.revision! + 1 + i });
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    down = false;

    const deadline = Date.now() + 10_000;
    while (events.length < 12 && stream.reason === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(events.filter((e) => e.type === "reset")).toEqual([]);
    expect(events.map((e) => (e.type === "change" ? e.change.revision : -1))).toEqual(Array.from({ length: 12 }, (_, i) => tree.revision! + 1 + i));
    expect(stream.reason).toBe(null);
    stream.end("closed");
  });
});
