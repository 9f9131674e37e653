/**
 * Runs a request while asking the server's `/healthz` every 25 ms (one at a time), to see
 * whether the request stalls the server's event loop. The server must be another process
 * (test/helpers/server.ts), or the probe measures this one.
 *
 * With the server's pid it also reads, from /proc, the CPU time its main thread (the event
 * loop's; its thread id is the pid) and the whole process spent over the request. Those are
 * what a test of "the heavy work runs off the event loop" asserts on: a wall-time bound on
 * /healthz also counts the time the kernel gave the server's thread to other processes,
 * and on a two-core machine running the suite's files side by side that alone reached
 * 836 ms (a CI run of session 19) while the export itself ran in its worker.
 */
import { readFileSync } from "node:fs";

/** CPU milliseconds (user + system) from a /proc stat line: 100 ticks a second on Linux. */
function cpuMs(statPath: string): number {
  const fields = readFileSync(statPath, "utf8").split(") ")[1].split(" ");
  // After "pid (comm) ": state is field 0, utime field 11, stime field 12.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export async function whileProbingHealth<T>(url: string, request: () => Promise<T>, serverPid?: number) {
  let done = false;
  const latencies: number[] = [];
  const probe = (async () => {
    while (!done) {
      const started = performance.now();
      await (await fetch(`${url}/healthz`)).arrayBuffer();
      latencies.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  const cpu = () => (serverPid === undefined ? { main: 0, all: 0 } : { main: cpuMs(`/proc/${serverPid}/task/${serverPid}/stat`), all: cpuMs(`/proc/${serverPid}/stat`) });
  const cpuBefore = cpu();
  const started = performance.now();
  try {
    const result = await request();
    const ms = performance.now() - started;
    const cpuAfter = cpu();
    return {
      result,
      ms,
      worst: Math.max(0, ...latencies),
      probes: latencies.length,
      /** The server's main thread's CPU over the request (0 without its pid). */
      mainCpuMs: cpuAfter.main - cpuBefore.main,
      /** The whole server process's CPU over the request, every thread (0 without its pid). */
      serverCpuMs: cpuAfter.all - cpuBefore.all,
    };
  } finally {
    done = true;
    await probe;
  }
}
