/**
 * Runs a request while asking the server's `/healthz` every 25 ms (one at a time), to see
 * whether the request stalls the server's event loop. The server must be another process
 * (test/helpers/server.ts), or the probe measures this one.
 */
export async function whileProbingHealth<T>(url: string, request: () => Promise<T>) {
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
  const started = performance.now();
  try {
    const result = await request();
    return { result, ms: performance.now() - started, worst: Math.max(0, ...latencies), probes: latencies.length };
  } finally {
    done = true;
    await probe;
  }
}
