/**
 * Reading a selection set as graphql-js executes it, for the checks that look at an
 * operation before or beside execution (operation-limits.ts, answer-bound.ts): one way to
 * merge fields, so the limits and graphql-js never disagree on what a query asks for.
 */
import { Kind, type FieldNode, type FragmentDefinitionNode, type SelectionSetNode } from "graphql";

/**
 * The fields of `sets` by response key, in first-appearance order, each key with every field
 * node answering to it (as graphql-js merges them), through inline fragments and fragment
 * spreads (each fragment once). Directives (@skip, @include) are ignored: counting more,
 * never less.
 */
export function collectFields(sets: readonly SelectionSetNode[], fragments: ReadonlyMap<string, FragmentDefinitionNode>): Map<string, FieldNode[]> {
  const groups = new Map<string, FieldNode[]>();
  const spread = new Set<string>();
  const visit = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        const group = groups.get(key);
        if (group) group.push(selection);
        else groups.set(key, [selection]);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        visit(selection.selectionSet);
      } else if (!spread.has(selection.name.value)) {
        spread.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) visit(fragment.selectionSet);
      }
    }
  };
  for (const set of sets) visit(set);
  return groups;
}

/**
 * Fields selected in `set`, through fragments, each fragment once (as graphql-js merges them):
 * the values each record of a list counts in the result budget (result-budget.ts, card-lists.ts).
 */
export function selectionWidth(
  set: SelectionSetNode | undefined,
  fragments: Record<string, FragmentDefinitionNode>,
  spread: Set<string>,
): number {
  let width = 0;
  for (const selection of set?.selections ?? []) {
    if (selection.kind === Kind.FIELD) width += 1;
    else if (selection.kind === Kind.INLINE_FRAGMENT) width += selectionWidth(selection.selectionSet, fragments, spread);
    else if (!spread.has(selection.name.value)) {
      spread.add(selection.name.value);
      width += selectionWidth(fragments[selection.name.value]?.selectionSet, fragments, spread);
    }
  }
  return width;
}

