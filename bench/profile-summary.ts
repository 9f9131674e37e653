/**
 * Reads a V8 CPU profile (node --cpu-prof) and prints where the time went: the functions
 * with the most self time, and self time summed per package or source file. Used by
 * `npm run bench -- --profile`, or alone: `tsx bench/profile-summary.ts FILE.cpuprofile`.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./processes.js";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}

/** Where a frame comes from: an npm package, one of our files, or Node itself. */
function origin(url: string): string {
  if (url === "") return "(native / V8)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith("node:")) return url;
  const file = url.replace(/^file:\/\//, "");
  return file.startsWith(ROOT) ? path.relative(ROOT, file) : file;
}

export function summariseProfile(file: string, top = 20): void {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const totalSamples = profile.samples.length;
  const msPerSample = (profile.endTime - profile.startTime) / 1000 / Math.max(1, totalSamples);
  const byFunction = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = origin(url);
    const key = `${functionName || "(anonymous)"}  ${where}${url ? `:${lineNumber + 1}` : ""}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + hits);
    byOrigin.set(where, (byOrigin.get(where) ?? 0) + hits);
  }
  const print = (title: string, map: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [name, hits] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      const share = ((hits / totalSamples) * 100).toFixed(1).padStart(5);
      console.log(`${share}%  ${(hits * msPerSample).toFixed(0).padStart(7)} ms  ${name}`);
    }
  };
  print("Self time by function", byFunction);
  print("Self time by package or file", byOrigin);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  summariseProfile(process.argv[2], Number(process.argv[3] ?? 30));
}
