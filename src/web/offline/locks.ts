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
    hold: (owner) =>
      new Promise((resolveHold) => {
        void locks.request(
          `${OWNER_PREFIX}${owner}`,
          () =>
            new Promise<void>((releaseLock) => {
              resolveHold(() => releaseLock());
            }),
        );
      }),
    alive: async () => {
      const state = await locks.query();
      const names = [...(state.held ?? []), ...(state.pending ?? [])].map((lock) => lock.name ?? "");
      return new Set(names.filter((name) => name.startsWith(OWNER_PREFIX)).map((name) => name.slice(OWNER_PREFIX.length)));
    },
    exclusive: async (name, run) => await locks.request(name, () => run()),
  };
}

/** A queue's name: random, so a reloaded tab's queue is never mistaken for its predecessor. */
export function newOwnerName(): string {
  let name = "";
  for (const byte of globalThis.crypto.getRandomValues(new Uint8Array(8))) name += byte.toString(16).padStart(2, "0");
  return name;
}
