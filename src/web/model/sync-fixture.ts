/**
 * A save queue for the unit tests of sync.ts: one tab alone on its device (no other tab holds
 * a lock, sends run at once), timers that never fire, and the device given (an outbox in
 * memory by default). Hooks a test leaves out are absent: a call of one fails the change.
 */
import { MemoryDevice, type DeviceStore } from "../offline/outbox.js";
import { SyncQueue, type SyncEnvironment, type SyncHooks } from "./sync.js";
import type { CardVersions } from "./versions.js";

export function queueForTest(
  api: unknown,
  hooks: Partial<SyncHooks>,
  versions: CardVersions,
  options: { device?: DeviceStore; owner?: string; environment?: Partial<SyncEnvironment> } = {},
): SyncQueue {
  return new SyncQueue(api as never, "t", hooks as SyncHooks, versions, {
    device: options.device ?? new MemoryDevice(),
    coordinator: { hold: async () => () => undefined, alive: async () => new Set(), exclusive: (_name, run) => run() },
    owner: options.owner ?? "me",
    userId: "u",
    environment: { setTimeout: () => 0, clearTimeout: () => undefined, onOnline: () => () => undefined, now: () => Date.now(), ...options.environment },
  });
}
