/**
 * This tab's device store for the signed-in user (IndexedDB, one database per user), and the
 * cross-tab coordinator. A tab has one user at a time; logging out forgets that user's data.
 */
import type { Coordinator } from "../model/sync.js";
import { forgetUser, IndexedDbDevice } from "./idb.js";
import { browserCoordinator } from "./locks.js";
import type { DeviceStore } from "./outbox.js";

let current: IndexedDbDevice | null = null;
let coordinator: Coordinator | null = null;

/** The user's store; null where the browser has no IndexedDB (the outbox then lives in memory). */
export function deviceFor(userId: string): DeviceStore | null {
  if (typeof indexedDB === "undefined") return null;
  if (current?.userId !== userId) {
    current?.close();
    current = new IndexedDbDevice(userId);
  }
  return current;
}

export function deviceCoordinator(): Coordinator {
  coordinator ??= browserCoordinator();
  return coordinator;
}

/** Deletes what this browser keeps for the user (outbox, trees): their log-out. */
export async function forgetDevice(userId: string): Promise<void> {
  if (current?.userId === userId) {
    current.close();
    current = null;
  }
  if (typeof indexedDB !== "undefined") await forgetUser(userId);
}
