/**
 * A mutation's changes reach the caller (SPEC §10): the response's `extensions.revisions`
 * lists each change the operation committed, `{treeId, revision, kind}` in order, so a
 * client knows which revisions are its own (REST says the same with `X-Tree-Revision`).
 * Absent when the operation changed nothing.
 */
import type { Plugin } from "graphql-yoga";
import { observeCommits } from "../domain/commit-observer.js";
import type { Change } from "../shared/changes.js";

export const changeRevisionsPlugin: Plugin = {
  onExecute({ executeFn, setExecuteFn }) {
    const committed: Change[] = [];
    setExecuteFn((args) => observeCommits((change) => committed.push(change), () => executeFn(args)));
    return {
      onExecuteDone({ result, setResult }) {
        if (committed.length === 0 || Symbol.asyncIterator in result) return;
        const revisions = committed.map((change) => ({ treeId: change.treeId, revision: change.revision, kind: change.kind }));
        setResult({ ...result, extensions: { ...result.extensions, revisions } });
      },
    };
  },
};
