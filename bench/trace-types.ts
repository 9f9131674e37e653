/**
 * The shapes the trace benches (trace-load.ts, trace-open.ts, trace-offline.ts) read from
 * Chromium's trace events and V8's CPU profiles: only the fields they use.
 */

export interface TraceEvent {
  name: string;
  cat: string;
  ph: string;
  ts: number;
  dur?: number;
  /** The thread's CPU time in the event, µs (not stretched by other processes on the machine). */
  tdur?: number;
  pid: number;
  tid: number;
  args?: { name?: string; data?: Record<string, unknown> };
}

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
  /** Samples by line of the function's script (1-based), when the profiler kept them. */
  positionTicks?: { line: number; ticks: number }[];
}
