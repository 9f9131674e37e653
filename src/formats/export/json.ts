/**
 * The json export (SPEC §6): `[{"content": "...", "children": [...]}]`, the shape the
 * importer reads back. Written by hand with an explicit stack because JSON.stringify
 * recurses and overflows the stack on a 10,000-level chain of cards.
 */
import type { SeedNode } from "../../shared/records.js";
import { nestSelected, type ExportInput } from "./select.js";

/** The selection as nested JSON; with `column`, a flat array of that column's cards. */
export function jsonExporter({ selected }: ExportInput): string {
  return stringifySeedNodes(nestSelected(selected));
}

/**
 * Same output as `JSON.stringify(nodes)` (compact: indenting a deep chain would cost
 * depth² bytes of spaces), for any depth.
 */
export function stringifySeedNodes(nodes: readonly SeedNode[]): string {
  const out: string[] = ["["];
  const stack: { nodes: readonly SeedNode[]; next: number }[] = [{ nodes, next: 0 }];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    if (frame.next === frame.nodes.length) {
      stack.pop();
      // Closes the children array, then the object that owns it (the outer array has none).
      out.push(stack.length > 0 ? "]}" : "]");
      continue;
    }
    const node = frame.nodes[frame.next];
    if (frame.next > 0) out.push(",");
    frame.next += 1;
    out.push('{"content":', JSON.stringify(node.content));
    if (node.children && node.children.length > 0) {
      out.push(',"children":[');
      stack.push({ nodes: node.children, next: 0 });
    } else {
      out.push("}");
    }
  }
  return out.join("");
}
