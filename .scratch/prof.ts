import { rm, mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../src/config.js";
import { startServer } from "../src/server.js";
import { CardtreeClient } from "../bench/cardtree-client.js";
import { generateTree } from "../bench/generate.js";

const dir = await mkdtemp(path.join(os.tmpdir(), "feedprof-"));
const server = await startServer(loadConfig({ PORT: "0", HOST: "127.0.0.1", DATA_DIR: dir, LOG: "off" }));
const url = (server as any).url as string;
const reader = await CardtreeClient.signUp(url, "r@x.example");
const tree = await reader.treeWith("big", generateTree(10_000, 1));
const treeId = (tree as any)._id ?? tree;
const cardsPath = `/api/trees/${treeId}/cards`;
const cards = await reader.json<{ _id: string }[]>("GET", cardsPath);
let selection = "";
for (let level = 0; level < 8; level++) selection = `{ ...C${selection ? ` children ${selection}` : ""} }`;
const query = `query WholeTree { tree(id: "${treeId}") { roots ${selection} } }
fragment C on Card { id treeId parentId content position createdAt updatedAt }`;
const rest: number[] = [];
const gql: number[] = [];
const restCached: number[] = [];
const gqlCached: number[] = [];
for (let i = 0; i < Number(process.argv[2] ?? 30); i++) {
  await reader.json("PUT", `${cardsPath}/${cards[(i * 37) % cards.length]._id}`, { content: `REST edit ${i} ${Math.random()}` });
  rest.push((await reader.timed(cardsPath)).ms);
  restCached.push((await reader.timed(cardsPath)).ms);
  await reader.json("PUT", `${cardsPath}/${cards[(i * 41) % cards.length]._id}`, { content: `GQL edit ${i} ${Math.random()}` });
  const r = await reader.timed("/graphql", { query });
  if (r.status !== 200) throw new Error("graphql " + r.status);
  gql.push(r.ms);
  gqlCached.push((await reader.timed("/graphql", { query })).ms);
}
const p50 = (t: number[]) => [...t].sort((a, b) => a - b)[Math.floor(t.length / 2)];
console.log(`cached: REST p50 ${p50(restCached).toFixed(1)}, GraphQL p50 ${p50(gqlCached).toFixed(1)}`);
console.log(`after edit: REST p50 ${p50(rest).toFixed(1)} ms, GraphQL p50 ${p50(gql).toFixed(1)} ms, ratio ${(p50(gql) / p50(rest)).toFixed(2)}; per-round ratio p50 ${p50(gql.map((g, i) => g / rest[i])).toFixed(2)}`);
await (server as any).close();
await rm(dir, { recursive: true, force: true });
