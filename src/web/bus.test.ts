import { describe, expect, it, vi } from "vitest";
import { appBus, createBus } from "./bus.js";

describe("the event bus (window.Backbone)", () => {
  it("calls listeners with the trigger's arguments, and 'all' listeners with the name first", () => {
    const bus = createBus();
    const one = vi.fn();
    const all = vi.fn();
    bus.on("card:save", one).on("all", all);
    bus.trigger("card:save", "id1", "text");
    expect(one).toHaveBeenCalledWith("id1", "text");
    expect(all).toHaveBeenCalledWith("card:save", "id1", "text");
  });

  it("takes space-separated names, and off removes by name, callback or context", () => {
    const bus = createBus();
    const context = {};
    const a = vi.fn();
    const b = vi.fn();
    bus.on("key:up key:down", a).on("key:up", b, context);
    bus.trigger("key:down");
    bus.off("key:up", a);
    bus.trigger("key:up");
    expect(a).toHaveBeenCalledTimes(1);
    expect(b).toHaveBeenCalledTimes(1);
    bus.off(null, null, context);
    bus.trigger("key:up");
    expect(b).toHaveBeenCalledTimes(1);
  });

  it("runs once-listeners once, and keeps going when a listener throws", () => {
    const bus = createBus();
    const once = vi.fn();
    const after = vi.fn();
    const error = vi.spyOn(console, "error").mockImplementation(() => undefined);
    bus.once("x", once).on("x", () => {
      throw new Error("a broken user script");
    });
    bus.on("x", after);
    bus.trigger("x").trigger("x");
    expect(once).toHaveBeenCalledTimes(1);
    expect(after).toHaveBeenCalledTimes(2);
    error.mockRestore();
  });

  it("lets a wrapped trigger see what the app triggers, however it is called", () => {
    const bus = createBus();
    const seen: string[] = [];
    const original = bus.trigger;
    bus.trigger = (name, ...args) => {
      seen.push(name);
      return original(name, ...args);
    };
    const listener = vi.fn();
    bus.on("key:down", listener);
    bus.trigger("key:down");
    expect(seen).toEqual(["key:down"]);
    expect(listener).toHaveBeenCalled();
  });

  it("sends the app's typed triggers through the scripts' bus, even after a script wrapped it", () => {
    const scripts = createBus();
    const bus = appBus(scripts);
    const seen: unknown[][] = [];
    const original = scripts.trigger;
    scripts.trigger = (name, ...args) => {
      seen.push([name, ...args]);
      return original(name, ...args);
    };
    const saved = vi.fn();
    const owner = {};
    bus.on(["card:save", "card:cancel"], saved, owner);
    bus.trigger("card:save", "id1", "text");
    scripts.trigger("card:cancel", "id2");
    bus.offAll(owner);
    bus.trigger("card:cancel", "id3");
    expect(seen).toEqual([
      ["card:save", "id1", "text"],
      ["card:cancel", "id2"],
      ["card:cancel", "id3"],
    ]);
    expect(saved.mock.calls).toEqual([
      ["id1", "text"],
      ["id2"],
    ]);
  });
});
