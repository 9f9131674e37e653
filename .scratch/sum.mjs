import { readFileSync, readdirSync } from "node:fs";
const dir = process.argv[2];
const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
const p = JSON.parse(readFileSync(`${dir}/${file}`));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = new Map();
p.samples.forEach((s, i) => dt.set(s, (dt.get(s) ?? 0) + (p.timeDeltas[i] ?? 0)));
for (const [id, t] of dt) {
  const n = byId.get(id);
  const key = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").slice(-2).join("/")}:${n.callFrame.lineNumber}`;
  self.set(key, (self.get(key) ?? 0) + t);
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
console.log("total ms", (total / 1000).toFixed(0));
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 35)) console.log((v / 1000).toFixed(1).padStart(8), k);
