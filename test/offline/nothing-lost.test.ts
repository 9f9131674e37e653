/**
 * The "nothing lost" simulation, small and seeded (issue 26; the big run is in
 * `npm run bench`): six simulated browsers, one with two tabs, writing on one shared tree as
 * two users with the client's real sync code, through offline windows, dropped answers, tab
 * kills and a server killed with SIGKILL. On PostgreSQL (the postgres project) two server
 * processes share the database and one of them is killed; on the embedded store the one
 * process is killed and started again on its data directory.
 *
 * SIM_SEED=<n> runs one seed again; a failure prints the seed it ran with.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, TEST_STORE } from "../helpers/postgres.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { runSimulation } from "./simulation.js";

const SEEDS = process.env.SIM_SEED ? [Number(process.env.SIM_SEED)] : [20261126, 4242];

describe(`nothing lost: seeded simulation on ${TEST_STORE === "postgres" ? "two PostgreSQL processes" : "the embedded store"}`, () => {
  let servers: TestServer[] = [];

  beforeAll(async () => {
    // A server killed mid-request leaves its idempotency claims behind; on PostgreSQL the
    // other process keeps them, and the tabs' retries of those keys answer 409 until the
    // claim's lease ends: 30 s in production (held by test/domain/idempotency.test.ts and
    // src/config.test.ts), which was most of this file's time. A 5 s lease (renewed every
    // 1.7 s) makes the same takeover happen sooner.
    const lease = { IDEMPOTENCY_LEASE_MS: "5000" };
    if (TEST_STORE === "postgres") {
      const env = { ...lease, STORE: "postgres", DATABASE_URL: await createTestDatabase() };
      servers = [await startTestServer({ env }), await startTestServer({ env })];
    } else {
      servers = [await startTestServer({ env: lease })];
    }
  });

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  for (const seed of SEEDS) {
    it(`seed ${seed}: every accepted change is kept once, and every tab shows the server's tree`, { timeout: 240_000 }, async () => {
      const report = await runSimulation({ seed, devices: 6, steps: 180, servers, killServerRate: 0.005 });
      // The servers a kill restarted are the ones to stop at the end.
      servers = report.servers;
      if (report.problems.length > 0) console.error(`Simulation failed with seed ${seed} (SIM_SEED=${seed} runs it again):\n${report.problems.join("\n")}`);
      expect(report.problems, `seed ${seed}`).toEqual([]);
      console.log(`seed ${seed}: ${report.broughtBack} cards brought back (${report.duplicates} beside an original still there), ${report.createsPutBack} answered creates put back, ${report.editsStoodIn} edits of cards missing on opening stood in, ${report.followers} cards followed a card brought back`);
      // The run did what it claims: writes, and each kind of fault.
      expect(report.accepted).toBeGreaterThan(50);
      expect(report.offlineWindows).toBeGreaterThan(0);
      expect(report.droppedAnswers).toBeGreaterThan(0);
      expect(report.tabKills).toBeGreaterThan(0);
      console.log(`simulation seed ${seed}: ${JSON.stringify({ ...report, servers: undefined })}`);
    });
  }
});
