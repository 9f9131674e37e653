/**
 * A Store kept in memory only: for domain tests that exercise commands against the port
 * without a data directory (milliseconds, not a server start), and for the store contract
 * tests as a third engine. It keeps the guarantees the domain relies on: records are
 * copied in and out (a caller changing a returned record changes nothing stored), `email`
 * and `publicUrl` are unique, a write of several records is all or nothing, and a change's
 * revision is taken once per tree. It is never used by a running server.
 */
import type { ChangeKey, ChangeRepository, IdempotencyRecord, KeyedChange, KeyedRemoval, Session, Store, StoreStatus } from "../domain/ports/store.js";
import type { Change } from "../shared/changes.js";
import { ConflictError } from "../shared/errors.js";
import type { StoredCard, StoredScript, StoredUser, Tree } from "../shared/records.js";
import { idempotencyId, recordsToSweep } from "./idempotency-records.js";

const copy = <T>(value: T): T => structuredClone(value);

/** A record copied, its kept body a Buffer as the other engines return it (structuredClone makes a plain Uint8Array). */
function copyKey(record: IdempotencyRecord): IdempotencyRecord {
  const { answer, ...rest } = record;
  return { ...copy(rest), ...(answer ? { answer: { ...copy({ ...answer, body: undefined }), body: Buffer.from(answer.body) } } : {}) };
}

class UniqueViolation extends Error {
  constructor(field: string, value: string) {
    super(`${field} ${JSON.stringify(value)} is already taken`);
  }
}

export function openMemoryStore(): Store {
  let status: StoreStatus = "open";
  const users = new Map<string, StoredUser>();
  const trees = new Map<string, Tree>();
  const cards = new Map<string, StoredCard>();
  const sessions = new Map<string, Session>();
  const scripts = new Map<string, StoredScript>();
  const keys = new Map<string, IdempotencyRecord>();
  /** Per tree, oldest first. */
  const changes = new Map<string, Change[]>();
  /** The key each keyed change was committed with (the same objects as in `changes`). */
  const changeKeys = new WeakMap<Change, ChangeKey>();
  /** Trees keyed requests removed, by tree id, until their keys expire. */
  const removals = new Map<string, KeyedRemoval>();

  const open = () => {
    if (status !== "open") throw new Error(`The store is ${status}.`);
  };
  const assertUniqueEmail = (user: StoredUser) => {
    for (const other of users.values()) {
      if (other._id !== user._id && other.email === user.email) throw new UniqueViolation("email", user.email);
    }
  };
  const assertUniquePublicUrl = (tree: Tree) => {
    if (tree.publicUrl === undefined) return;
    for (const other of trees.values()) {
      if (other._id !== tree._id && other.publicUrl === tree.publicUrl) throw new UniqueViolation("publicUrl", tree.publicUrl);
    }
  };
  const cardsOf = (treeId: string, trashed: boolean) =>
    [...cards.values()].filter((card) => card.treeId === treeId && (card.trashed !== undefined) === trashed).map(copy);
  const logOf = (treeId: string) => changes.get(treeId) ?? [];

  const changeRepository: ChangeRepository = {
    commit: async (change, tree, key) => {
      open();
      const log = logOf(change.treeId);
      if (log.some((c) => c.revision === change.revision)) {
        throw new ConflictError(`Revision ${change.revision} of the tree was already written; try again.`);
      }
      assertUniquePublicUrl(tree);
      // Every check is above: from here on nothing throws, so the write is all or nothing.
      const logged = copy(change);
      if (key) changeKeys.set(logged, { ...key });
      changes.set(change.treeId, [...log, logged]);
      trees.set(tree._id, copy(tree));
      for (const card of change.after) cards.set(card._id, copy(card));
    },
    byKey: async (userId, key, since) => {
      open();
      const found: KeyedChange[] = [];
      for (const log of changes.values()) {
        for (const change of log) {
          const k = changeKeys.get(change);
          if (k && k.userId === userId && k.key === key && change.at >= since) found.push({ step: k.step, change: copy(change) });
        }
      }
      for (const [treeId, { key: k, at }] of removals) {
        if (k.userId === userId && k.key === key && at >= since) found.push({ step: k.step, removedTreeId: treeId });
      }
      return found.sort((a, b) => a.step - b.step);
    },
    since: async (treeId, since, limit) => {
      open();
      return logOf(treeId).filter((c) => c.revision > since).slice(0, limit).map(copy);
    },
    history: async (treeId, { before, limit }) => {
      open();
      return logOf(treeId)
        .filter((c) => before === undefined || c.revision < before)
        .reverse()
        .slice(0, limit)
        .map(copy);
    },
    ofCard: async (treeId, cardId, limit) => {
      open();
      const touches = (c: Change) => c.after.some((card) => card._id === cardId) || c.before.some((card) => card._id === cardId);
      return logOf(treeId).filter(touches).reverse().slice(0, limit).map(copy);
    },
    prune: async (olderThan) => {
      open();
      let dropped = 0;
      for (const [treeId, log] of changes) {
        const latest = log.at(-1);
        const kept = log.filter((c) => c === latest || c.at >= olderThan);
        dropped += log.length - kept.length;
        changes.set(treeId, kept);
      }
      return dropped;
    },
  };

  return {
    status: () => status,
    close: async () => {
      status = "closed";
    },
    users: {
      insert: async (user) => {
        open();
        if (users.has(user._id)) throw new UniqueViolation("_id", user._id);
        assertUniqueEmail(user);
        users.set(user._id, copy(user));
      },
      byId: async (id) => {
        open();
        const user = users.get(id);
        return user ? copy(user) : null;
      },
      byIds: async (ids) => {
        open();
        return ids.flatMap((id) => (users.has(id) ? [copy(users.get(id)!)] : []));
      },
      byEmail: async (email) => {
        open();
        const user = [...users.values()].find((u) => u.email === email);
        return user ? copy(user) : null;
      },
      list: async () => {
        open();
        return [...users.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt)).map(copy);
      },
      update: async (id, fields) => {
        open();
        const user = users.get(id);
        if (!user) return null;
        const next = { ...user, ...copy(fields) };
        assertUniqueEmail(next);
        users.set(id, next);
        return copy(next);
      },
    },
    trees: {
      byId: async (id) => {
        open();
        const tree = trees.get(id);
        return tree ? copy(tree) : null;
      },
      byPublicUrl: async (publicUrl) => {
        open();
        const tree = [...trees.values()].find((t) => t.publicUrl === publicUrl);
        return tree ? copy(tree) : null;
      },
      forUser: async (userId) => {
        open();
        return [...trees.values()].filter((t) => t.users.includes(userId)).map(copy);
      },
      removeWithCards: async (id, keyed) => {
        open();
        if (keyed) removals.set(id, structuredClone(keyed));
        trees.delete(id);
        for (const card of [...cards.values()]) if (card.treeId === id) cards.delete(card._id);
        changes.delete(id);
      },
    },
    cards: {
      byId: async (id) => {
        open();
        const card = cards.get(id);
        return card ? copy(card) : null;
      },
      liveById: async (id) => {
        open();
        const card = cards.get(id);
        return card && card.trashed === undefined ? copy(card) : null;
      },
      trashedByTree: async (treeId) => {
        open();
        return cardsOf(treeId, true);
      },
      liveByTree: async (treeId) => {
        open();
        return cardsOf(treeId, false);
      },
      countLiveByTrees: async (treeIds) => {
        open();
        const wanted = new Set(treeIds);
        let count = 0;
        for (const card of cards.values()) if (wanted.has(card.treeId) && card.trashed === undefined) count++;
        return count;
      },
    },
    changes: changeRepository,
    sessions: {
      insert: async (session) => {
        open();
        sessions.set(session._id, copy(session));
      },
      byId: async (id) => {
        open();
        const session = sessions.get(id);
        return session ? copy(session) : null;
      },
      withUser: async (id) => {
        open();
        const session = sessions.get(id);
        if (!session) return null;
        const user = users.get(session.userId);
        return { session: copy(session), user: user ? copy(user) : null };
      },
      remove: async (id) => {
        open();
        sessions.delete(id);
      },
      removeForUser: async (userId, exceptId) => {
        open();
        for (const session of [...sessions.values()]) {
          if (session.userId === userId && session._id !== exceptId) sessions.delete(session._id);
        }
      },
      removeExpired: async (now) => {
        open();
        for (const session of [...sessions.values()]) if (session.expiresAt < now) sessions.delete(session._id);
      },
    },
    scripts: {
      insert: async (script) => {
        open();
        if (scripts.has(script._id)) throw new UniqueViolation("_id", script._id);
        scripts.set(script._id, copy(script));
      },
      byId: async (id) => {
        open();
        const script = scripts.get(id);
        return script ? copy(script) : null;
      },
      forUser: async (userId) => {
        open();
        return [...scripts.values()]
          .filter((script) => script.userId === userId)
          .sort((a, b) => (a.createdAt === b.createdAt ? (a._id < b._id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1))
          .map(copy);
      },
      replace: async (script) => {
        open();
        if (scripts.has(script._id)) scripts.set(script._id, copy(script));
      },
      remove: async (id) => {
        open();
        scripts.delete(id);
      },
    },
    idempotency: {
      claim: async (record) => {
        open();
        const id = idempotencyId(record.userId, record.key);
        const there = keys.get(id);
        if (there) return copyKey(there);
        keys.set(id, copyKey(record));
        return null;
      },
      takeOver: async (record, previousClaim) => {
        open();
        const id = idempotencyId(record.userId, record.key);
        if (keys.get(id)?.claim !== previousClaim) return false;
        keys.set(id, copyKey(record));
        return true;
      },
      renew: async (userId, key, claim, leaseUntil) => {
        open();
        const record = keys.get(idempotencyId(userId, key));
        if (record?.claim !== claim) return false;
        record.leaseUntil = leaseUntil;
        return true;
      },
      complete: async (userId, key, claim, answer) => {
        open();
        const record = keys.get(idempotencyId(userId, key));
        if (record?.claim !== claim) return;
        delete record.claim;
        record.answer = copyKey({ ...record, answer }).answer;
      },
      release: async (userId, key, claim) => {
        open();
        const id = idempotencyId(userId, key);
        if (keys.get(id)?.claim === claim) keys.delete(id);
      },
      sweep: async (now, most) => {
        open();
        const sizes = [...keys.values()].map((record) => ({ ...record, bytes: record.answer?.body.length ?? 0 }));
        const dropped = recordsToSweep(sizes, now, most);
        for (const record of dropped) keys.delete(idempotencyId(record.userId, record.key));
        for (const [treeId, removal] of removals) if (removal.expiresAt < now) removals.delete(treeId);
        return dropped.length;
      },
    },
  };
}
