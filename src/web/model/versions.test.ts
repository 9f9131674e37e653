import { describe, expect, it } from "vitest";
import type { Card } from "../../shared/records.js";
import { CardVersions } from "./versions.js";

function card(content: string, __v = 3): Card {
  return { _id: "c1", treeId: "t1", parentId: null, content, position: 0, createdAt: "2026-11-27T10:00:00.000Z", updatedAt: "2026-11-27T10:00:00.000Z", __v };
}

describe("CardVersions", () => {
  it("keeps the server's copy as a card's base while the writer edits it, until the server confirms another", () => {
    const versions = new CardVersions();
    const loaded = card("As loaded");
    versions.confirm(loaded, loaded);
    loaded.content = "The writer's text";
    loaded.position = 4;
    expect(versions.base(loaded)).toEqual({ __v: 3, content: "As loaded", parentId: null, position: 0 });
    expect(versions.differs(loaded)).toBe(true);
    versions.confirm(loaded, { __v: 4, content: "The writer's text", parentId: null, position: 4 });
    expect(versions.base(loaded)).toEqual({ __v: 4, content: "The writer's text", parentId: null, position: 4 });
    expect(loaded.__v).toBe(4);
    expect(versions.differs(loaded)).toBe(false);
  });

  it("keeps the base out of the card as scripts, JSON, copies and the device's structured clones see it", () => {
    const versions = new CardVersions();
    const loaded = card("As loaded");
    const fields = Object.keys(loaded);
    versions.confirm(loaded, loaded);
    expect(Object.keys(loaded)).toEqual(fields);
    expect(Reflect.ownKeys(loaded)).toEqual(fields);
    expect(JSON.parse(JSON.stringify(loaded))).toEqual(card("As loaded"));
    expect(structuredClone(loaded)).toEqual(card("As loaded"));
    // A copy is a card of its own: never confirmed, its base is the copy as it is.
    loaded.content = "Edited";
    const copy = { ...loaded };
    expect(versions.base(copy).content).toBe("Edited");
    expect(versions.base(loaded).content).toBe("As loaded");
  });

  it("moves a recovered draft's base back to the older version it was written from, never forward", () => {
    const versions = new CardVersions();
    const loaded = card("Newer", 5);
    versions.confirm(loaded, loaded);
    versions.rebase(loaded, { __v: 7, content: "From the future" });
    expect(versions.base(loaded).__v).toBe(5);
    versions.rebase(loaded, { __v: 2, content: "Older" });
    expect(versions.base(loaded)).toEqual({ __v: 2, content: "Older", parentId: null, position: 0 });
    expect(loaded.__v).toBe(2);
  });

  it("counts every base recorded, by the server's word or a draft's rebase, and not a base only read", () => {
    const versions = new CardVersions();
    const loaded = card("Loaded", 3);
    versions.base(loaded);
    expect(versions.generation).toBe(0);
    versions.confirm(loaded, loaded);
    expect(versions.generation).toBe(1);
    versions.confirm(loaded, { __v: 4, content: "Saved", parentId: null, position: 0 });
    expect(versions.generation).toBe(2);
    versions.rebase(loaded, { __v: 1, content: "Older" });
    expect(versions.generation).toBe(3);
    versions.base(loaded);
    versions.differs(loaded);
    expect(versions.generation).toBe(3);
  });
});
