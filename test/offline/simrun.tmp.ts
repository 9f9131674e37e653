import { startTestServer } from "../helpers/server.js";
import { runSimulation } from "./simulation.js";
const server = await startTestServer();
const report = await runSimulation({ seed: Number(process.env.SEED ?? 1), devices: 6, steps: Number(process.env.STEPS ?? 100), servers: [server], killServerRate: 0.01 });
console.log(JSON.stringify({ ...report, servers: undefined }, null, 1));
await Promise.all(report.servers.map((s) => s.stop()));
process.exit(0);
