/**
 * What every domain command needs: the store, the configuration, the password hasher and
 * the per-tree write lock. Built once at start-up and handed to both transports.
 */
import type { Config } from "../config.js";
import type { Store } from "../store/store.js";
import { KeyedLock } from "./keyed-lock.js";
import { PasswordHasher } from "./passwords.js";

export interface DomainContext {
  store: Store;
  config: Config;
  hasher: PasswordHasher;
  treeLocks: KeyedLock;
}

export function createDomainContext(store: Store, config: Config): DomainContext {
  return {
    store,
    config,
    hasher: new PasswordHasher(config.limits.concurrentHashes),
    treeLocks: new KeyedLock(),
  };
}
