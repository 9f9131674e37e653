/**
 * Tabs of one browser share the outbox (SPEC §13) through the Web Locks API:
 * - each save queue holds a lock named after itself for as long as it lives; an outbox entry
 *   whose queue holds no lock belongs to a tab that was closed or reloaded, and the next queue
 *   of that tree adopts it (under an exclusive lock, so two tabs never adopt the same entry);
 * - each request is sent under the tree's send lock, so the tabs' changes go one at a time.
 * Where Web Locks are missing (a page not served over HTTPS or from localhost), every entry
 * not this tab's own is taken as orphaned: the server's idempotency keys still apply each
 * change once if two tabs should send it.
 */
import type { Coordinator } from "../model/sync.js";

const OWNER_PREFIX = "cardtree-owner-";

export function browserCoordinator(): Coordinator {
  const locks = typeof navigator !== "undefined" ? navigator.locks : undefined;
  if (!locks) {
    return {
      hold: async () => () => undefined,
      alive: async () => null,
      exclusive: (_name, run) => run(),
    };
  }
  return {
    hold: (owner) => holdLock(locks, `${OWNER_PREFIX}${owner}`),
    alive: async () => liveNames(locks, OWNER_PREFIX),
    exclusive: async (name, run) => await locks.request(name, () => run()),
  };
}

/** Holds the lock `name` (asked for now, granted when free) until the returned function is called, or the page goes. */
export function holdLock(locks: LockManager, name: string): Promise<() => void> {
  return new Promise((resolveHold) => {
    void locks.request(
      name,
      () =>
        new Promise<void>((releaseLock) => {
          resolveHold(() => releaseLock());
        }),
    );
  });
}

/** The names of the locks held or asked for now that start with `prefix`, the prefix taken off: whose holders live. */
export async function liveNames(locks: LockManager, prefix: string): Promise<Set<string>> {
  const state = await locks.query();
  const names = [...(state.held ?? []), ...(state.pending ?? [])].map((lock) => lock.name ?? "");
  return new Set(names.filter((name) => name.startsWith(prefix)).map((name) => name.slice(prefix.length)));
}

/** A queue's name: random, so a reloaded tab's queue is never mistaken for its predecessor. */
export function newOwnerName(): string {
  let name = "";
  for (const byte of globalThis.crypto.getRandomValues(new Uint8Array(8))) name += byte.toString(16).padStart(2, "0");
  return name;
}
