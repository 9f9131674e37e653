/**
 * The status line says a change waits "on this device" only once it is in the device's outbox
 * (issue 26). Before, it said so as soon as the change was queued, while the IndexedDB write was
 * still running: a browser closed at that moment, trusting the status, lost the change (the
 * offline browser test met it under load in CI rehearsals).
 */
import { describe, expect, it } from "vitest";
import type { Card } from "../../shared/records.js";
import { MemoryDevice, type OutboxEntry } from "../offline/outbox.js";
import { waitingText } from "../views/sync-status.js";
import { queueForTest } from "./sync-fixture.js";
import type { SyncHooks, SyncStatus } from "./sync.js";
import { CardVersions } from "./versions.js";

/** A device whose outbox writes wait until the test lets them finish. */
class SlowDevice extends MemoryDevice {
  private gates: (() => void)[] = [];

  override async add(entry: OutboxEntry): Promise<OutboxEntry> {
    await new Promise<void>((resolve) => this.gates.push(resolve));
    return super.add(entry);
  }

  finishWrites(): void {
    for (const open of this.gates.splice(0)) open();
  }
}

function card(id: string, content: string): Card {
  const at = "2026-11-27T00:00:00.000Z";
  return { _id: id, treeId: "t", parentId: null, content, position: 0, createdAt: at, updatedAt: at, __v: 1 };
}

/** The text the status line shows for a status that has changes waiting. */
function shown(status: SyncStatus): string {
  if (status.kind === "saved") return "All changes saved";
  return waitingText(status.pending, status.since, status.unstored);
}

describe("the status line and the device's outbox", () => {
  it("says 'on this device' only once the offline change is written there", async () => {
    const c = card("c", "one");
    const versions = new CardVersions();
    versions.confirm(c, c);
    const statuses: SyncStatus[] = [];
    const hooks = { status: (status: SyncStatus) => statuses.push(status) } as unknown as SyncHooks;
    const device = new SlowDevice();
    // Offline: nothing is sent, a try waits on a timer that never fires here.
    const queue = queueForTest({}, hooks, versions, { device, environment: { setTimeout: () => 1, offline: () => true } });

    c.content = "one two";
    void queue.update(c);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const before = statuses.at(-1)!;
    expect(before).toMatchObject({ kind: "retrying", pending: 1, unstored: 1 });
    expect(queue.unstored).toBe(1);
    expect(shown(before)).toBe("1 change waiting, keeping it on this device…");

    device.finishWrites();
    await queue.stored();
    const after = statuses.at(-1)!;
    // Told again when the write ends, though a retry is waiting on its timer.
    expect(after).toMatchObject({ kind: "retrying", pending: 1, unstored: 0 });
    expect(shown(after)).toMatch(/^1 change waiting on this device since \d\d:\d\d/);
    expect((await device.entries()).map((entry) => entry.fields?.content)).toEqual(["one two"]);
  });
});
