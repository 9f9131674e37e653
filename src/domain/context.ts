/**
 * What every domain command needs: the store, the configuration, the password hasher, the
 * per-tree write lock and the per-tree revisions. Built once at start-up and handed to both
 * transports.
 */
import type { Config } from "../config.js";
import type { Store } from "../store/store.js";
import { KeyedLock } from "./keyed-lock.js";
import { PasswordHasher } from "./passwords.js";
import { TreeRevisions } from "./tree-revisions.js";

export interface DomainContext {
  store: Store;
  config: Config;
  hasher: PasswordHasher;
  treeLocks: KeyedLock;
  /** Moved by `withTree` after every write, for readers that cache what they derive. */
  treeRevisions: TreeRevisions;
}

export function createDomainContext(store: Store, config: Config): DomainContext {
  return {
    store,
    config,
    hasher: new PasswordHasher(config.limits.concurrentHashes),
    treeLocks: new KeyedLock(),
    treeRevisions: new TreeRevisions(),
  };
}
