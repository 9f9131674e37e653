/**
 * `node bench/heap-diff.mjs BEFORE.heapsnapshot AFTER.heapsnapshot [N]`: what grew between
 * two V8 heap snapshots, by constructor (or kind, for closures, arrays, strings and
 * internals): count and self size, the largest growth first, and per unit of N (say, per
 * stream opened). For bench/scenarios/stream-memory.ts's MEMORY_PROBE_SNAPSHOTS.
 */
import { readFileSync } from "node:fs";

function summarise(file) {
  const snapshot = JSON.parse(readFileSync(file, "utf8"));
  const { node_fields: fields, node_types: [types] } = snapshot.snapshot.meta;
  const width = fields.length;
  const at = (name) => fields.indexOf(name);
  const [typeAt, nameAt, sizeAt] = [at("type"), at("name"), at("self_size")];
  const totals = new Map();
  const nodes = snapshot.nodes;
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt]];
    const name = type === "object" || type === "native" || type === "closure" ? `${type}:${snapshot.strings[nodes[i + nameAt]]}` : type === "hidden" || type === "code" || type === "array" ? `${type}:${snapshot.strings[nodes[i + nameAt]]}`.slice(0, 60) : type;
    const entry = totals.get(name) ?? { count: 0, size: 0 };
    entry.count++;
    entry.size += nodes[i + sizeAt];
    totals.set(name, entry);
  }
  return totals;
}

const [before, after] = [summarise(process.argv[2]), summarise(process.argv[3])];
const per = Number(process.argv[4] ?? 1);
const rows = [];
for (const [name, { count, size }] of after) {
  const was = before.get(name) ?? { count: 0, size: 0 };
  rows.push({ name, count: count - was.count, size: size - was.size });
}
rows.sort((a, b) => b.size - a.size);
let total = 0;
for (const row of rows) total += row.size;
console.log(`total growth ${(total / 1e6).toFixed(2)} MB, ${(total / per).toFixed(0)} B per unit`);
for (const row of rows.slice(0, 40)) {
  console.log(`${(row.size / per).toFixed(0).padStart(7)} B/unit ${(row.count / per).toFixed(2).padStart(7)} obj/unit  ${row.name}`);
}
