import { it } from "vitest";
import { buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer } from "../helpers/in-process-server.js";

it("micro", async () => {
  const server = await startInProcessServer();
  const alice = await buildUser(server.url);
  const tree = await buildTree(alice);
  const auth = alice.authHeader!;
  const url = `${server.url}/api/trees/${tree._id}/cards`;
  let n = 0;
  const send = (keyed: boolean) =>
    fetch(url, { method: "POST", headers: { authorization: auth, "content-type": "application/json", ...(keyed ? { "Idempotency-Key": `k${++n}` } : {}) }, body: JSON.stringify({ treeId: tree._id, position: n, content: "x" }) }).then((r) => r.text());
  for (const round of [1, 2, 3, 4]) {
    for (const keyed of [false, true]) {
      const cpu = process.cpuUsage();
      for (let i = 0; i < 150; i++) await Promise.all(Array.from({ length: 8 }, () => send(keyed)));
      const used = process.cpuUsage(cpu);
      console.log(round, keyed ? "keyed" : "plain", "cpu ms/req", ((used.user + used.system) / 1000 / 1200).toFixed(3));
    }
  }
  await server.stop();
}, 300_000);
