/**
 * What a benchmark run records: one row per measurement, the targets of issue 8 checked
 * against them, notes for what was skipped, and the machine. Printed as tables on stdout
 * and written to bench/results.json.
 */
import { writeFileSync } from "node:fs";
import os from "node:os";

export interface Row {
  id: string;
  scenario: string;
  requestsPerSecond?: number;
  p50Ms?: number;
  p99Ms?: number;
  /** One-shot timings (imports, exports, start-up): the median of the repetitions. */
  ms?: number;
  rssMb?: number;
  bytes?: number;
  errors?: number;
  note?: string;
}

export interface Target {
  name: string;
  wanted: string;
  measured: string;
  met: boolean | null;
}

export class Report {
  readonly rows: Row[] = [];
  readonly targets: Target[] = [];
  readonly notes: string[] = [];
  private readonly loadBefore = os.loadavg();

  constructor(readonly settings: Record<string, unknown>) {}

  add(row: Row): Row {
    this.rows.push(row);
    const cells = [
      row.requestsPerSecond === undefined ? "" : `${row.requestsPerSecond.toFixed(1)} req/s`,
      row.p50Ms === undefined ? "" : `p50 ${row.p50Ms.toFixed(2)} ms`,
      row.p99Ms === undefined ? "" : `p99 ${row.p99Ms.toFixed(2)} ms`,
      row.ms === undefined ? "" : `${row.ms.toFixed(0)} ms`,
      row.rssMb === undefined ? "" : `RSS ${row.rssMb.toFixed(0)} MB`,
      row.errors ? `${row.errors} ERRORS` : "",
    ].filter(Boolean);
    console.log(`  · ${row.scenario}: ${cells.join(", ")}${row.note ? ` (${row.note})` : ""}`);
    return row;
  }

  find(id: string): Row | undefined {
    return this.rows.find((r) => r.id === id);
  }

  target(target: Target): void {
    this.targets.push(target);
  }

  note(text: string): void {
    this.notes.push(text);
    console.log(`  ! ${text}`);
  }

  print(): void {
    const table = (header: string[], lines: string[][]) => {
      const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? "").length)));
      const fmt = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
      console.log(fmt(header));
      console.log(widths.map((w) => "-".repeat(w)).join("  "));
      for (const line of lines) console.log(fmt(line));
    };
    const num = (value: number | undefined, digits: number) => (value === undefined ? "" : value.toFixed(digits));
    console.log("\nResults");
    table(
      ["scenario", "req/s", "p50 ms", "p99 ms", "time ms", "RSS MB", "MB/req", "note"],
      this.rows.map((r) => [
        r.scenario,
        num(r.requestsPerSecond, 1),
        num(r.p50Ms, 2),
        num(r.p99Ms, 2),
        num(r.ms, 0),
        num(r.rssMb, 0),
        r.bytes === undefined ? "" : (r.bytes / 1e6).toFixed(2),
        [r.errors ? `${r.errors} errors` : "", r.note ?? ""].filter(Boolean).join("; "),
      ]),
    );
    console.log("\nTargets (issue 8)");
    table(
      ["target", "wanted", "measured", "met"],
      this.targets.map((t) => [t.name, t.wanted, t.measured, t.met === null ? "n/a" : t.met ? "yes" : "NO"]),
    );
    if (this.notes.length > 0) {
      console.log("\nNotes");
      for (const note of this.notes) console.log(`- ${note}`);
    }
  }

  write(file: string): void {
    const cpus = os.cpus();
    const machine = {
      cpu: cpus[0]?.model ?? "unknown",
      cores: cpus.length,
      memoryGb: Number((os.totalmem() / 2 ** 30).toFixed(1)),
      node: process.version,
      platform: `${os.type()} ${os.release()}`,
      loadAverageBefore: this.loadBefore.map((l) => Number(l.toFixed(2))),
      loadAverageAfter: os.loadavg().map((l) => Number(l.toFixed(2))),
    };
    const data = { date: new Date().toISOString(), machine, settings: this.settings, rows: this.rows, targets: this.targets, notes: this.notes };
    writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
    console.log(`\nMachine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGb} GB, Node ${machine.node}; load average before ${machine.loadAverageBefore.join(" ")}, after ${machine.loadAverageAfter.join(" ")}`);
    console.log(`Written to ${file}`);
  }
}

/** The nearest-rank percentile `p` (0-100) of `values`; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** The p50, p95 and largest of some timings (0 each when there are none). */
export function spread(values: readonly number[]): { p50: number; p95: number; max: number } {
  if (values.length === 0) return { p50: 0, p95: 0, max: 0 };
  return { p50: percentile(values, 50), p95: percentile(values, 95), max: percentile(values, 100) };
}

/** Median of a few timings: one slow outlier (a GC, a neighbour's burst) does not move it. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The values' middle half (their lower and upper quartiles), as "a–b" with two decimals. */
export function middleHalf(values: readonly number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  return `${sorted[Math.floor((sorted.length - 1) / 4)].toFixed(2)}–${sorted[Math.ceil(((sorted.length - 1) * 3) / 4)].toFixed(2)}`;
}
