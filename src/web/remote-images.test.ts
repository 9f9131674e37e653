import { describe, expect, it } from "vitest";
import { remoteImagesFor } from "./remote-images.js";

describe("remoteImagesFor", () => {
  it("holds remote images back on public pages by default, loads them on members' pages", () => {
    expect(remoteImagesFor(true, "click")).toBe("click");
    expect(remoteImagesFor(false, "click")).toBe("load");
  });

  it("allow loads them everywhere; block nowhere", () => {
    expect([remoteImagesFor(true, "allow"), remoteImagesFor(false, "allow")]).toEqual(["load", "load"]);
    expect([remoteImagesFor(true, "block"), remoteImagesFor(false, "block")]).toEqual(["block", "block"]);
  });
});
