/**
 * Values a request's work carries along its async calls (the durability scope, the commit
 * observer, the keyed request, PostgreSQL's kept-read attempt), all in one AsyncLocalStorage.
 *
 * Why one: Node 20 runs AsyncLocalStorage's promise hook on every promise once any storage
 * is in use, and the hook copies each storage's value onto the new promise, a property of
 * its own. With a storage per purpose, every promise of a card write got three (embedded
 * store) or four (PostgreSQL) such properties and as many copies; a card write makes 77–237
 * promises (docs/performance.md, session 16). One storage holding a small frame of every
 * slot's value costs one property and one copy a promise; a slot's `run` makes a new frame
 * (a few per request), which is the cheaper side to pay on.
 *
 * A slot behaves as a storage of its own: `run` sets its value for `fn` and what `fn` starts,
 * the other slots' values stay as they were, and the previous value is back once `fn` returns.
 */
import { AsyncLocalStorage } from "node:async_hooks";

type Frame = Readonly<Record<symbol, unknown>>;

const frames = new AsyncLocalStorage<Frame>();

export class AsyncSlot<T> {
  private readonly key: symbol;

  /** `name` names the slot's key in a heap snapshot; slots with one name are still apart. */
  constructor(name: string) {
    this.key = Symbol(name);
  }

  /** Runs `fn` with this slot holding `value`, the other slots unchanged. */
  run<R>(value: T, fn: () => R): R {
    const current = frames.getStore();
    return frames.run(current === undefined ? { [this.key]: value } : { ...current, [this.key]: value }, fn);
  }

  /** The value of the innermost `run` of this slot around the caller, or undefined outside any. */
  get(): T | undefined {
    return frames.getStore()?.[this.key] as T | undefined;
  }
}
