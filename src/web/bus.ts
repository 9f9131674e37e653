/**
 * The event bus, published as `window.Backbone` because that is the name Gingko user scripts
 * call. Every UI action is a `trigger` on it and the app reacts through `on`, so a script that
 * wraps `Backbone.trigger` sees each action. The app always calls `bus.trigger(...)` as a
 * property lookup at call time for that reason: never keep a reference to the function.
 *
 * The subset of Backbone.Events scripts use: `on`, `off`, `once`, `trigger`, space-separated
 * names, and the catch-all `"all"` event whose listeners get the event name first.
 *
 * Two faces of one bus: `EventBus` is what scripts get, untyped; `AppBus` is what the app's
 * own code uses, typed by the event map of events.ts, and forwarding every call to the
 * untyped bus as a property lookup at call time, so a wrapped `Backbone.trigger` still sees
 * every event the app sends.
 */
import type { AppEvents, EventName } from "./events.js";

// User scripts put anything on the bus (window.Backbone): its listeners take any arguments.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Listener = (...args: any[]) => unknown;

interface Registration {
  callback: Listener;
  context: unknown;
  once: boolean;
}

export interface EventBus {
  on(names: string, callback: Listener, context?: unknown): EventBus;
  once(names: string, callback: Listener, context?: unknown): EventBus;
  off(names?: string | null, callback?: Listener | null, context?: unknown): EventBus;
  trigger(name: string, ...args: unknown[]): EventBus;
}

export function createBus(): EventBus {
  const listeners = new Map<string, Registration[]>();

  const add = (names: string, callback: Listener, context: unknown, once: boolean) => {
    for (const name of splitNames(names)) {
      const list = listeners.get(name) ?? [];
      list.push({ callback, context, once });
      listeners.set(name, list);
    }
  };

  // Copy before calling: a listener that adds or removes listeners must not disturb this round.
  const call = (name: string, args: unknown[]) => {
    const list = listeners.get(name);
    if (!list) return;
    for (const entry of [...list]) {
      if (entry.once) remove(name, entry);
      try {
        entry.callback.apply(entry.context, args);
      } catch (error) {
        // One broken user script must not stop the app's own listeners from running.
        console.error(`Listener for "${name}" failed`, error);
      }
    }
  };

  const remove = (name: string, entry: Registration) => {
    const list = listeners.get(name);
    if (!list) return;
    const index = list.indexOf(entry);
    if (index >= 0) list.splice(index, 1);
  };

  const bus: EventBus = {
    on(names, callback, context) {
      add(names, callback, context, false);
      return bus;
    },
    once(names, callback, context) {
      add(names, callback, context, true);
      return bus;
    },
    off(names, callback, context) {
      const targets = names ? splitNames(names) : [...listeners.keys()];
      for (const name of targets) {
        const list = listeners.get(name);
        if (!list) continue;
        listeners.set(
          name,
          list.filter(
            (entry) => (callback && entry.callback !== callback) || (context !== undefined && entry.context !== context),
          ),
        );
      }
      return bus;
    },
    trigger(name, ...args) {
      for (const single of splitNames(name)) {
        call(single, args);
        if (single !== "all") call("all", [single, ...args]);
      }
      return bus;
    },
  };
  return bus;
}

function splitNames(names: string): string[] {
  return names.split(/\s+/).filter(Boolean);
}

/** The app's view of the bus: event names and arguments checked against events.ts. */
export interface AppBus {
  /** The bus itself, as user scripts see it (`window.Backbone`). */
  readonly scripts: EventBus;
  /** Listens to one event, or to each of several; `owner` lets `offAll(owner)` remove them. */
  on<K extends EventName>(names: K | readonly K[], callback: (...args: AppEvents[K]) => unknown, owner?: object): void;
  /** Removes every listener registered with `owner`. */
  offAll(owner: object): void;
  trigger<K extends EventName>(name: K, ...args: AppEvents[K]): void;
}

export function appBus(scripts: EventBus): AppBus {
  return {
    scripts,
    on(names, callback, owner) {
      scripts.on(typeof names === "string" ? names : names.join(" "), callback as Listener, owner);
    },
    offAll(owner) {
      scripts.off(null, null, owner);
    },
    trigger(name, ...args) {
      scripts.trigger(name, ...args);
    },
  };
}
